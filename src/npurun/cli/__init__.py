"""The `npurun` command line.

Subcommands load what they need only when they run, so `npurun explain` never imports
TensorFlow.
"""
from __future__ import annotations

import argparse
import logging
import sys
import warnings

DESCRIPTION = """\
npurun runs Ascend NPURunConfig / NPUEstimator training on CPUs and NVIDIA GPUs.

Every option of NPURunConfig can be given on the command line with --set NAME=VALUE
(repeatable; values are YAML scalars: 10, true, null (or None), text; an option whose
value is text gets the text as typed, so dump_step=0 is "0") or in a JSON/YAML file with
--config FILE; --set wins over the file. Sub-config fields use dots:
--set dump_config.enable_dump=true --set dump_config.dump_path=/tmp/dump
"""

EPILOG = """\
examples:
  npurun explain --set iterations_per_loop=10 --set precision_mode=allow_mix_precision_bf16
      show what each option does on this machine (exit status 2 on an invalid config)
  npurun explain --config run.yaml --only-set
  npurun train --steps 400 --set save_checkpoints_steps=100
      train the bundled example (handwritten digits), evaluate it and export a SavedModel
  npurun check train.py && npurun run train.py --max_steps 100
      what an Ascend adapter script uses and how it behaves here; then run it unmodified
  npurun launch -n 2 train.py
      two data-parallel ranks on this machine

`npurun COMMAND --help` shows each command's options and examples.
"""


def _add_option_sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="JSON or YAML file of options")
    parser.add_argument("--set", metavar="NAME=VALUE", action="append", default=[], dest="assignments",
                        help="set one option (repeatable); wins over --config")


def _config_from_args(args):
    from ..config import sources

    layers = []
    if args.config is not None:  # `--config ""` is an error, not "no file"
        layers.append(sources.load_file(args.config))
    layers.append(sources.parse_assignments(args.assignments))
    return sources.construct(sources.merge(*layers))


def _build_config_or_exit(args):
    """The config, or the error printed and exit status 2; warnings are printed as notes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            config = _config_from_args(args)
        except (ValueError, TypeError) as err:
            print(f"npurun: invalid configuration: {err}", file=sys.stderr)
            raise SystemExit(2) from None
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)
    return config


def _explain_adapter(args) -> str:
    """npu_device when asked (--adapter npu_device) or when the script given imports npu_device (itself or a
    local module it imports, as `npurun run` decides); else npu_bridge (NPURunConfig's options)."""
    if args.adapter is not None:
        return args.adapter
    if args.script is not None:
        import os

        if not os.path.isfile(args.script):
            print(f"npurun explain: no such script: {args.script}", file=sys.stderr)
            raise SystemExit(2)
        from ..tools.run import _is_npu_device_script

        return "npu_device" if _is_npu_device_script(args.script) else "npu_bridge"
    return "npu_bridge"


def _explain_npu_device(args) -> int:
    from ..config import sources
    from . import explain

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            file_options = sources.load_file(args.config) if args.config is not None else {}
            options = explain.npu_device_options(file_options, args.assignments)
        except (ValueError, TypeError) as err:
            print(f"npurun: invalid configuration: {err}", file=sys.stderr)
            raise SystemExit(2) from None
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)
    print(explain.render_npu_device(options, only_set=args.only_set, fmt=args.format))
    return 0


def cmd_explain(args) -> int:
    from . import explain

    if _explain_adapter(args) == "npu_device":
        return _explain_npu_device(args)
    config = _build_config_or_exit(args)
    if args.format == "json":
        print(explain.render_json(config, only_set=args.only_set))
    else:
        print(explain.render_table(config, only_set=args.only_set))
    return 0


def _prepare_tensorflow(config) -> None:
    """Set what TensorFlow reads once at import, then import it without its start-up chatter."""
    import os

    from .. import logs

    if config.precision_mode == "allow_mix_precision_bf16":
        # The bf16 rewrite needs oneDNN, which TF 2.21 turns on by itself only on CPUs with
        # AVX512-BF16/AMX; it is read when TensorFlow is imported, so set it before.
        os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    tf = logs.import_tensorflow()
    if not logs.verbose():
        tf.get_logger().setLevel(logging.ERROR)


def cmd_train(args) -> int:
    from ..distribute.cluster import narrow_binds

    narrow_binds()  # before TensorFlow is imported: the servers bind the task's address only
    config = _build_config_or_exit(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # TensorFlow first, without its start-up chatter (the modules below import it)
    _prepare_tensorflow(config)
    # The rank and device variables are read when training starts, after the model_dir is created:
    # check them first, so a bad one (RANK_SIZE=abc, ASCEND_DEVICE_ID=-1) is an error before anything is written.
    from ..distribute.ranks import read_ranks
    from ..runtime.session_options import resolve_device_id

    read_ranks()
    resolve_device_id(config.options)
    from ..example.digits import run_example

    result = run_example(config, train_steps=args.steps, model_dir=args.model_dir, export_dir=args.export_dir)
    print(f"accuracy: {result['accuracy']:.4f}")
    print(f"model_dir: {result['model_dir']}")
    print(f"exported SavedModel: {result['export_path']}")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: an int >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {value}; allowed: an int >= 1")
    return value


INT64_MAX = 2 ** 63 - 1


def _global_step(text: str) -> int:
    """--steps: a global step, which TensorFlow keeps as an int64."""
    value = _positive_int(text)
    if value > INT64_MAX:
        raise argparse.ArgumentTypeError(f"got {value}; allowed: an int in [1, {INT64_MAX}] (the global step is an "
                                         f"int64)")
    return value


def _directory_argument(text: str) -> str:
    """--model-dir / --export-dir: a path the file system and TensorFlow take, that is not a file."""
    import os

    from ..config.parsers import path_problem

    problem = path_problem(text) if text else None
    if problem is not None:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: a directory path ({problem})")
    if text and os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: a directory path (it exists and is not a directory)")
    if text and os.path.islink(text) and not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: a directory path (a symbolic link to nothing, or "
                                         f"in a loop)")
    return text


def _add_global_flags(parser: argparse.ArgumentParser, default=None) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="show TensorFlow's own log lines too (same as NPURUN_VERBOSE=1)")
    parser.add_argument("--debug", action="store_true", default=default,
                        help="print the traceback of every error (same as NPURUN_DEBUG=1)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="npurun", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"npurun {__version__}")
    _add_global_flags(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    from .help import ExamplesHelpFormatter

    explain = commands.add_parser(
        "explain", help="show every option's value, kind and mechanism on this machine",
        formatter_class=ExamplesHelpFormatter,
        description="Validate a configuration and show, for every NPURunConfig option, its value, whether "
                    "you set it, its kind here (effect / accepted, no effect here / not supported / not "
                    "implemented yet) and the TensorFlow mechanism it maps to. The table (or JSON) goes to "
                    "stdout. Exit status 2 and the error message when the configuration is invalid, so it "
                    "also checks a config file before a long run. Does not import TensorFlow.",
        epilog="examples:\n"
               "  npurun explain --set iterations_per_loop=10 --set precision_mode=allow_mix_precision_bf16\n"
               "  npurun explain --config run.yaml --only-set             # check a config file\n"
               "  npurun explain --format json > options.json            # one object per option, for tools\n"
               "  npurun explain train.py                                # the adapter train.py uses (npu_device:\n"
               "                                                         # the TF 2 rows below)\n"
               "  npurun explain --adapter npu_device --set hcom_parallel=false --set dump_config.dump_step=1\n"
               "      npu_device.global_options() under TensorFlow 2: each attribute's kind, and why an option\n"
               "      TensorFlow 2's runtime cannot honour does nothing (what npu_device.open() warns)")
    _add_option_sources(explain)
    explain.add_argument("script", nargs="?", metavar="SCRIPT",
                         help="a training script: explain the options of the adapter it imports (npu_device, the "
                              "TF 2 package, gives global_options()'s rows; npu_bridge NPURunConfig's); its own "
                              "option values are read by `npurun check SCRIPT`, not here")
    explain.add_argument("--adapter", choices=("npu_bridge", "npu_device"), default=None,
                         help="whose options: npu_bridge (NPURunConfig, TensorFlow 1 sessions; the default) or "
                              "npu_device (npu_device.global_options() under TensorFlow 2: --set takes its dotted "
                              "attribute names, e.g. dump_config.enable_dump=true, "
                              "experimental.multi_branches_config.dynamic_dims=...)")
    explain.add_argument("--format", choices=("table", "json"), default="table",
                         help="table (default, for reading) or json (for tools)")
    explain.add_argument("--only-set", action="store_true", help="only the options you set")
    explain.set_defaults(handler=cmd_explain)

    train = commands.add_parser(
        "train", help="train, evaluate and export the bundled example",
        formatter_class=ExamplesHelpFormatter,
        description="Train the bundled example (an MLP on the 8x8 handwritten digits, bundled, offline) with "
                    "NPUEstimator under the given options, evaluate it, export a SavedModel and print the "
                    "accuracy, the model directory and the SavedModel's path. Checkpoints and TensorBoard "
                    "event files go to the model directory, progress lines to stderr; a second run with the "
                    "same model directory resumes from its newest checkpoint.",
        epilog="examples:\n"
               "  npurun train --steps 400 --model-dir /tmp/digits --set iterations_per_loop=10\n"
               "  npurun train --config run.yaml --export-dir /tmp/digits_export\n"
               "  tensorboard --logdir /tmp/digits                      # the loss and steps/sec curves")
    _add_option_sources(train)
    train.add_argument("--steps", type=_global_step, default=600,
                       help="the global step to train to, a total: a run resumed from a model_dir trains "
                            "only the remaining steps (default 600)")
    train.add_argument("--model-dir", type=_directory_argument,
                       help="model directory (default: the config's, else a new model_dir_*)")
    train.add_argument("--export-dir", type=_directory_argument,
                       help="where to export the SavedModel (default: <model_dir>/export)")
    train.set_defaults(handler=cmd_train)

    _add_optional_commands(commands)
    for subparser in commands.choices.values():  # `npurun train -v` as well as `npurun -v train`
        _add_global_flags(subparser, default=argparse.SUPPRESS)
    return parser


# Subcommands owned by other packages: (module, registration function). Each module keeps its
# heavy imports inside its handlers, so building the parser stays light.
_COMMAND_PROVIDERS = (
    ("npurun.debug.cli", "add_dump_commands"),
    ("npurun.tools.cli", "add_compat_commands"),
    ("npurun.distribute.launch", "add_launch_command"),
)


def _add_optional_commands(commands) -> None:
    from importlib import import_module

    for module_name, function in _COMMAND_PROVIDERS:
        getattr(import_module(module_name), function)(commands)


# Commands that run a user's TensorFlow script in this process.
_RUNS_TENSORFLOW_CODE = ("run",)


def main(argv=None) -> int:
    import os

    from .. import reporting

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        from .. import logs

        logs.set_verbose()
    if args.debug:
        os.environ["NPURUN_DEBUG"] = "1"
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        print("\nnpurun: a COMMAND is required", file=sys.stderr)
        return 2
    try:
        if args.command in _RUNS_TENSORFLOW_CODE:
            from ..tools.run import start_run_process

            start_run_process()
        return args.handler(args) or 0
    except BrokenPipeError:  # output piped into `head` and friends
        sys.stderr.close()
        return 0
    except (KeyboardInterrupt, Exception) as error:  # noqa: BLE001 - a bug is re-raised by report()
        return reporting.report(error, args.command, args)

