"""`npurun dump ls|show|compare`: reading dumps from the command line (no TensorFlow needed).

Register with `add_dump_commands(subparsers)`; each subcommand sets `func`, a handler taking the
parsed arguments and returning the exit status. Rules:
- PATH is a dump directory (it holds `index.jsonl`) or a directory holding several, of which the
  newest is used (`ls` lists all of them).
- `ls PATH`: one row per record (kind, step, op, type, slot, shape, dtype, file).
- `show PATH [--op NAME] [--step N]`: one row per record with its statistics (min, max, mean,
  std, NaN and inf counts), filtered by exact op name / step.
- `compare A B [--rtol R] [--atol T]`: op by op max absolute and relative error (rules in
  `compare`), then the first tensor beyond tolerance. Exit 0 when every common tensor matches,
  1 when one does not (or a shape differs), 2 when there is nothing to compare or a path is bad.
"""
from __future__ import annotations

import argparse
import sys

# The readers (and NumPy) are imported by the handlers, so registering these commands keeps
# `npurun explain` light.


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def _table(rows: list[list], header: list[str], out) -> None:
    cells = [header] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")


def _slot(record: dict) -> str:
    return f"{record['io']}:{record['slot']}"


def _damaged(command: str, error: Exception) -> int:
    """A dump that cannot be read (a damaged index, a tensor file outside it): one paragraph, status 1."""
    sys.stderr.write(f"npurun dump {command}: {' '.join(str(error).split())}\n")
    return 1


def cmd_ls(args, out=None) -> int:
    from .dump_files import DumpError, dump_dirs, open_dump

    out = out or sys.stdout
    try:
        found = dump_dirs(args.path)
    except FileNotFoundError as error:
        sys.stderr.write(f"npurun dump ls: {error}\n")
        return 2
    if not found:
        sys.stderr.write(f"npurun dump ls: {args.path}: no dump here\n")
        return 2
    for path in found:
        try:
            dump = open_dump(path)
        except DumpError as error:
            return _damaged("ls", error)
        out.write(f"{dump.path}: {len(dump.records)} tensor(s)\n")
        _table([[r.get("kind"), r.get("step"), r["op"], r.get("type"), _slot(r), r.get("shape"), r.get("dtype"),
                 r.get("file")] for r in dump.records],
               ["kind", "step", "op", "type", "slot", "shape", "dtype", "file"], out)
    return 0


def cmd_show(args, out=None) -> int:
    from .dump_files import DumpError, open_dump

    out = out or sys.stdout
    try:
        dump = open_dump(args.path)
    except FileNotFoundError as error:
        sys.stderr.write(f"npurun dump show: {error}\n")
        return 2
    except DumpError as error:
        return _damaged("show", error)
    records = [r for r in dump.records
               if (args.op is None or r["op"] == args.op) and (args.step is None or r.get("step") == args.step)]
    if not records:
        sys.stderr.write(f"npurun dump show: no tensor matches in {dump.path}\n")
        return 2
    rows = []
    for r in records:
        s = r.get("stats") or {}
        rows.append([r.get("step"), r["op"], r.get("type"), _slot(r), r.get("shape"), r.get("dtype"), s.get("min"),
                     s.get("max"), s.get("mean"), s.get("std"), s.get("nan"),
                     (s.get("pos_inf") or 0) + (s.get("neg_inf") or 0) if "nan" in s else None])
    out.write(f"{dump.path}\n")
    _table(rows, ["step", "op", "type", "slot", "shape", "dtype", "min", "max", "mean", "std", "nan", "inf"], out)
    return 0


def _dtypes(comparison) -> str:
    a, b = (comparison.dtypes + (None, None))[:2]
    return f"{a or '-'}/{b or '-'}"


def cmd_compare(args, out=None) -> int:
    from .compare import FAILING, compare_dumps, first_failure
    from .dump_files import DumpError, open_dump

    out = out or sys.stdout
    try:
        a, b = open_dump(args.a), open_dump(args.b)
    except FileNotFoundError as error:
        sys.stderr.write(f"npurun dump compare: {error}\n")
        return 2
    except DumpError as error:
        return _damaged("compare", error)
    try:
        results = compare_dumps(a, b, rtol=args.rtol, atol=args.atol)
    except DumpError as error:
        return _damaged("compare", error)
    compared = [c for c in results if c.status not in ("only_a", "only_b")]
    if not compared:
        sys.stderr.write("npurun dump compare: the dumps share no tensor (compare needs dump_data='tensor' "
                         "dumps of the same ops and steps)\n")
        return 2
    out.write(f"A: {a.path}\nB: {b.path}\nrtol={args.rtol} atol={args.atol}\n")
    _table([[c.key[1], c.key[2] + (f" (vs {c.against})" if c.against else ""), f"{c.key[3]}:{c.key[4]}",
             _dtypes(c), c.status, c.max_abs, c.max_rel, c.bad, c.size]
            for c in results], ["step", "op", "slot", "dtype A/B", "status", "max_abs", "max_rel", "bad", "size"], out)
    if args.plot:
        from .plot import PlotUnavailable, plot_relative_error

        try:
            shown = plot_relative_error(results, args.plot, f"{a.path} vs {b.path}")
        except PlotUnavailable as error:
            sys.stderr.write(f"npurun dump compare: {error}\n")
            return 2
        except OSError as error:  # a planted link, a missing folder, a full disk: nothing is written
            sys.stderr.write(f"npurun dump compare: --plot {args.plot}: cannot write the plot: "
                             f"{error.strerror or error}\n")
            return 2
        out.write(f"plot: {args.plot} ({shown} tensors)\n")
    failure = first_failure(results)
    failed = sum(c.status in FAILING for c in results)
    if failure is None:
        out.write(f"OK: {len(compared)} tensor(s) within tolerance\n")
        return 0
    out.write(f"MISMATCH: {failed} of {len(compared)} tensor(s) beyond tolerance; first: {failure.label} "
              f"({failure.status}, max_abs={_fmt(failure.max_abs)}, max_rel={_fmt(failure.max_rel)})\n")
    return 1


def _tolerance(text: str) -> float:
    """--rtol / --atol: a finite number >= 0 (NumPy's isclose takes nothing else)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: a finite number >= 0") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: a finite number >= 0")
    return value


def _plot_file(text: str) -> str:
    """--plot: a file path the file system takes (not empty, not a directory)."""
    import os

    from ..config.parsers import path_problem

    problem = "it is empty" if not text else path_problem(text)
    if problem is None and os.path.isdir(text):
        problem = "it is a directory"
    if problem is not None:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: the path of the PNG file to write ({problem})")
    return text


def add_dump_commands(subparsers) -> argparse.ArgumentParser:
    """Add `dump ls|show|compare` to an argparse subparsers object; return the `dump` parser."""
    from ..cli.help import ExamplesHelpFormatter

    dump = subparsers.add_parser("dump", help="inspect and compare tensor dumps",
                                 formatter_class=ExamplesHelpFormatter,
                                 description="Inspect and compare dumps written by DumpConfig or "
                                             "enable_exception_dump. PATH is a dump directory (it holds "
                                             "index.jsonl) or a dump_path holding several: ls lists them all, "
                                             "show and compare read the newest. Tables go to stdout; only "
                                             "compare --plot writes a file.",
                                 epilog="examples:\n"
                                        "  npurun dump ls /tmp/dump\n"
                                        "  npurun dump show /tmp/dump --op dense/MatMul --step 3\n"
                                        "  npurun dump compare /tmp/golden /tmp/dump --plot error.png")
    commands = dump.add_subparsers(dest="dump_command", metavar="{ls,show,compare}")
    commands.required = True
    path_help = "a dump directory, or a dump_path holding several"
    ls = commands.add_parser("ls", help="list the tensors of a dump", formatter_class=ExamplesHelpFormatter,
                             description="One row per dumped tensor: kind, step, op, type, slot, shape, dtype "
                                         "and the .npy file.",
                             epilog="examples:\n  npurun dump ls /tmp/dump")
    ls.add_argument("path", help=path_help + " (all of them are listed)")
    ls.set_defaults(handler=cmd_ls)
    show = commands.add_parser("show", help="statistics of a dump's tensors", formatter_class=ExamplesHelpFormatter,
                               description="One row per dumped tensor with its min, max, mean, std and NaN and "
                                           "inf counts.",
                               epilog="examples:\n  npurun dump show /tmp/dump --op dense/MatMul --step 3")
    show.add_argument("path", help=path_help + " (the newest is read)")
    show.add_argument("--op", help="only this op (exact name)")
    show.add_argument("--step", type=int, help="only this step")
    show.set_defaults(handler=cmd_show)
    compare = commands.add_parser("compare", help="compare two dumps op by op (exit 1 on a mismatch)",
                                  formatter_class=ExamplesHelpFormatter,
                                  description="Op by op, the max absolute and relative error of every tensor "
                                              "both dumps hold, then the first one beyond tolerance. Exit "
                                              "status 0 when every common tensor matches, 1 when one does not "
                                              "(or a shape differs), 2 when there is nothing to compare.",
                                  epilog="examples:\n"
                                         "  npurun dump compare /tmp/golden /tmp/dump      # a float32 run vs a "
                                         "mixed-precision one\n"
                                         "  npurun dump compare /tmp/golden /tmp/dump --rtol 1e-2 --plot error.png")
    compare.add_argument("a", help="the reference dump (a golden run)")
    compare.add_argument("b", help="the dump to compare with it")
    compare.add_argument("--rtol", type=_tolerance, default=1e-5, help="relative tolerance (default 1e-5)")
    compare.add_argument("--atol", type=_tolerance, default=1e-8, help="absolute tolerance (default 1e-8)")
    compare.add_argument("--plot", metavar="FILE.png", type=_plot_file,
                         help="also write a PNG of the max relative error of each tensor along the graph "
                              "(needs matplotlib: pip install \"npurun[plot]\")")
    compare.set_defaults(handler=cmd_compare)
    return dump


def main(argv=None) -> int:
    """Stand-alone entry: `python -m npurun.debug.cli dump ...`."""
    parser = argparse.ArgumentParser(prog="npurun")
    sub = parser.add_subparsers(dest="command", metavar="{dump}")
    sub.required = True
    add_dump_commands(sub)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
