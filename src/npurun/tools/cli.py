"""The `run`, `migrate` and `check` subcommands; `add_compat_commands(subparsers)` registers them."""
from __future__ import annotations

import argparse
import sys


def cmd_run(args) -> int:
    from ..distribute.cluster import narrow_binds

    narrow_binds()  # before TensorFlow is imported: the servers bind the task's address only
    from .run import run_module, run_script

    if args.module:
        return run_module(args.script, args.args)
    return run_script(args.script, args.args)


def _rewrite_script(path: str, migration) -> bool:
    """`migrate --in-place`: the script replaced by its migration through a private temporary file (never
    written through a symbolic link, which npurun did not make), keeping its permission bits."""
    import os

    from ..safe_files import PlantedLinkError, replacing

    try:
        mode = os.stat(path).st_mode & 0o7777
        with replacing(path, "w", "script", encoding=migration.encoding) as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(migration.migrated)
    except PlantedLinkError:
        print(f"npurun migrate: {path} is a symbolic link; --in-place does not write "
              f"through a link: give the file it points to, or use --diff", file=sys.stderr)
        return False
    except OSError as error:
        print(f"npurun migrate: cannot rewrite {path}: {error.strerror or error}", file=sys.stderr)
        return False
    return True


def cmd_migrate(args) -> int:
    from .migrate import migrate_file
    from .script_guard import ScriptRefused

    try:
        migration = migrate_file(args.script)
    except OSError as error:
        print(f"npurun migrate: {error}", file=sys.stderr)
        return 2
    except ScriptRefused as error:
        print(f"npurun migrate: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - libcst's parser errors
        print(f"npurun migrate: cannot parse {args.script}: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    if args.diff:
        sys.stdout.write(migration.diff(args.script))
    elif args.in_place:
        if migration.changed and not _rewrite_script(args.script, migration):
            return 2
    else:
        sys.stdout.write(migration.migrated)
    print(migration.report(args.script), file=sys.stderr)
    return 0


def cmd_check(args) -> int:
    from .check import check_file
    from .check.report import render_json, render_text

    from .script_guard import ScriptRefused

    try:
        findings = check_file(args.script, argv=args.script_args)
    except (OSError, SyntaxError, ScriptRefused) as error:
        print(f"npurun check: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    render = render_json if args.format == "json" else render_text
    print(render(findings, args.script))
    return 1 if any(f.error for f in findings) else 0


def add_compat_commands(subparsers) -> None:
    """Add `run`, `migrate` and `check` to the `npurun` command's subparsers."""
    from ..cli.help import ExamplesHelpFormatter

    run = subparsers.add_parser(
        "run", help="run an Ascend adapter script unmodified on this machine",
        formatter_class=ExamplesHelpFormatter,
        description="Run SCRIPT as __main__ with ARGS (everything after SCRIPT is the script's), as `python "
                    "SCRIPT ARGS` would, with npurun's compatibility layer active: `npu_bridge...` and `hccl...` "
                    "imports resolve to npurun (see docs/compat.md), and tf.estimator, tf.compat.v1.layers and "
                    "NpuOptimizer-aware sessions are there. The exit status is the script's; its outputs go "
                    "where the script writes them (its model_dir, ...), npurun's log lines to stderr."
                    "\n\n"
                    "Which TensorFlow `import tensorflow` gives: TensorFlow 1's API in graph mode for a script "
                    "(or a local module it imports) that uses the adapter, tf.contrib or a name only TensorFlow "
                    "1 has; TensorFlow 2 for any other script. NPURUN_TF_API=1 or 2 forces the choice. With no "
                    "rank environment set the script sees RANK_SIZE=1 and RANK_ID=0; `npurun launch` runs "
                    "several ranks.",
        epilog="examples:\n"
               "  npurun check train.py                              # first: what will not work here\n"
               "  npurun run train.py --batch_size 32 --max_steps 100\n"
               "  NPURUN_TF_API=2 npurun run tf2_train.py            # force TensorFlow 2 for the script")
    run.add_argument("-m", dest="module", action="store_true",
                     help="SCRIPT is a module name, run as `python -m SCRIPT` runs it (the current directory first "
                          "on sys.path)")
    run.add_argument("script", help="the training script (with -m: the module)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    run.set_defaults(handler=cmd_run)

    migrate = subparsers.add_parser(
        "migrate", help="rewrite a tf.estimator / Horovod script into npurun's NPU form",
        formatter_class=ExamplesHelpFormatter,
        description="Rewrite tf.estimator.RunConfig -> NPURunConfig, tf.estimator.Estimator -> NPUEstimator, "
                    "hvd.rank() -> get_rank_id() (and the other Horovod calls it knows), the rank-0-only "
                    "checkpoint pattern `x if rank() == 0 else None` -> `... else 0`, and remove RunConfig "
                    "arguments NPURunConfig does not accept, adding the npurun imports. Prints the migrated "
                    "source to stdout (default), a unified diff (--diff) or rewrites the file (--in-place); the "
                    "report of every change and of what it could not migrate goes to stderr. A second run "
                    "changes nothing.",
        epilog="examples:\n"
               "  npurun migrate train.py --diff           # review the changes\n"
               "  npurun migrate train.py > train_npu.py   # a migrated copy (the report is on stderr)\n"
               "  npurun migrate train.py --in-place       # rewrite the script itself")
    migrate.add_argument("script", help="the tf.estimator script to rewrite")
    mode = migrate.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff; do not write")
    mode.add_argument("--in-place", action="store_true", help="rewrite the script file")
    migrate.set_defaults(handler=cmd_migrate)

    check = subparsers.add_parser(
        "check", help="report the NPU options and adapter APIs a script uses and how each behaves here",
        formatter_class=ExamplesHelpFormatter,
        description="Statically report every NPURunConfig / RunConfig keyword, every NpuOptimizer "
                    "parameter_map entry, every Ascend adapter name and every TensorFlow name TF 2.21 lacks "
                    "that SCRIPT (and the local modules next to it that it imports) uses, with its status here. "
                    "The script is read, not run, and TensorFlow is not imported. The report goes to stdout; "
                    "lines marked ! will raise here. Exit status 1 when something will raise here, else 0.",
        epilog="examples:\n"
               "  npurun check train.py\n"
               "  npurun check train.py --format json > report.json   # one object per finding, for tools\n"
               "  npurun check train.py -- --mode=cmc --use_fp16      # flag branches as started with these")
    check.add_argument("script", help="the script to check")
    check.add_argument("script_args", nargs="*", metavar="-- ARGS",
                       help="the arguments the script would be started with (after --): the flag branches they take "
                            "are judged with them instead of the flags' defaults (--name=value, --name value, "
                            "--name and absl's --noname)")
    check.add_argument("--format", choices=("text", "json"), default="text",
                       help="text (default, for reading) or json (for tools)")
    check.set_defaults(handler=cmd_check)
