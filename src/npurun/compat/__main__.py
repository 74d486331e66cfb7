"""`python -m npurun.compat {run,migrate,check,docs} ...`: the compat subcommands without the main CLI.

`docs` prints docs/compat.md (the coverage table), generated from `npurun.adapter.tables`.
"""
import argparse
import sys

from ..tools.cli import add_compat_commands


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npurun.compat")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_compat_commands(commands)
    docs = commands.add_parser("docs", help="print docs/compat.md, generated from the coverage table")
    docs.set_defaults(handler=_print_docs)
    args = parser.parse_args(argv)
    if args.command == "run":  # as `npurun run` does (npurun.cli): set-up TensorFlow reads only at its import,
        from .. import logs  # then TensorFlow imported before the script does, without its start-up banner
        from ..tools.run import prepare_process

        prepare_process()
        logs.import_tensorflow()
    return args.handler(args)


def _print_docs(args) -> int:
    from ..tools.compat_docs import render_markdown

    sys.stdout.write(render_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
