"""How npurun reports an exception to a person: one paragraph for a user's error, a traceback for a bug.

Used by the `npurun` command (`npurun.cli`) and by `npurun run` for a script's own exception
(`npurun.tools.run`); it lives under the library, not in the CLI, so library code never imports the CLI.

Rules (exit status):
- 2: a usage error: a bad argument, an invalid option value, options that conflict (npurun's
  option errors, and the ValueError / TypeError npurun's own argument checks raise).
- 1: a failed run the user can fix: a path that is a file, does not exist or is not writable
  (OSError, or TensorFlow's file-system errors raised by its file I/O layer), and npurun's own
  errors about the run's inputs and surroundings (`UserFixableError`: a model_dir whose checkpoints
  do not restore, a full disk, a model_dir another job trains in, a port in use).
- 130 / 143: interrupted (Ctrl-C / SIGTERM); no traceback.
- Anything else is a bug in npurun (or TensorFlow): its traceback is printed as Python would.
`--debug` or NPURUN_DEBUG=1 prints the traceback of user errors too.

Plain Python; TensorFlow's error classes are looked up only if TensorFlow is already imported.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Optional

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
DEBUG_HINT = "(run with --debug or NPURUN_DEBUG=1 for the traceback)"
_PATH_HINT = "Check that the path exists, is a directory where one is expected, and is writable."

# TensorFlow's errors that its file-system layer raises for a user's path.
_TF_PATH_ERRORS = ("NotFoundError", "PermissionDeniedError", "AlreadyExistsError", "FailedPreconditionError")


class UserFixableError(Exception):
    """Mixed into npurun's errors about what the user gave or the machine it runs on (not a bug):
    the CLI reports them in one paragraph with exit status 1, without a traceback."""


def _frames(error: BaseException) -> list:
    return traceback.extract_tb(error.__traceback__)


def _in_npurun(filename: str) -> bool:
    return os.path.abspath(filename).startswith(PACKAGE_DIR + os.sep)


def _raised_by_npurun(error: BaseException) -> bool:
    """Whether npurun's own code raised `error` (the innermost frame is in the npurun package)."""
    frames = _frames(error)
    return bool(frames) and _in_npurun(frames[-1].filename)


def _tensorflow_path_error(error: BaseException) -> bool:
    tf_errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    if tf_errors is None or type(error).__name__ not in _TF_PATH_ERRORS:
        return False
    if not isinstance(error, tf_errors.OpError):
        return False
    return any(f"{os.sep}lib{os.sep}io{os.sep}" in f.filename for f in _frames(error))


def _message(error: BaseException) -> str:
    text = getattr(error, "message", None) or str(error) or type(error).__name__
    return " ".join(str(text).split())  # one paragraph


def classify(error: BaseException) -> Optional[tuple[int, str]]:
    """(exit status, one-paragraph message) for a user's error; None for a bug (keep the traceback)."""
    from .config.errors import OptionConflictError, OptionTypeError, OptionValueError

    if isinstance(error, (OptionValueError, OptionTypeError, OptionConflictError)):
        return 2, f"invalid configuration: {_message(error)}"
    if isinstance(error, UserFixableError):
        return 1, f"{type(error).__name__}: {_message(error)}"
    if isinstance(error, OSError) or _tensorflow_path_error(error):
        return 1, f"{type(error).__name__}: {_message(error)}. {_PATH_HINT}"
    if isinstance(error, (ValueError, TypeError)) and _raised_by_npurun(error):
        return 2, _message(error)
    return None


def debug_wanted(args=None) -> bool:
    return bool(getattr(args, "debug", False)) or \
        os.environ.get("NPURUN_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def report(error: BaseException, command: str, args=None, stream=None) -> int:
    """Print `error` as the rules above say; return the exit status. Re-raises a bug's exception."""
    stream = stream or sys.stderr
    if isinstance(error, KeyboardInterrupt):
        stream.write(f"npurun {command}: interrupted\n")
        return 130
    verdict = classify(error)
    if verdict is None:
        raise error
    status, message = verdict
    if debug_wanted(args):
        traceback.print_exception(type(error), error, error.__traceback__, file=stream)
        stream.write(f"npurun {command}: {message}\n")
    else:
        stream.write(f"npurun {command}: {message} {DEBUG_HINT}\n")
    return status


def print_script_exception(error: BaseException, script: str, stream=None) -> None:
    """A script's own exception: the traceback through the user's code only (not npurun's, not
    TensorFlow's, not the runner's), then one line naming the exception."""
    stream = stream or sys.stderr
    frames = [f for f in _frames(error) if _user_frame(f.filename)]
    if frames:
        stream.write("Traceback (most recent call last, frames of your code only):\n")
        stream.write("".join(traceback.format_list(frames)))
    name = type(error).__qualname__
    module = type(error).__module__
    if module not in ("builtins", "__main__"):
        name = f"{module}.{name}"
    stream.write(f"{name}: {_message(error)}\n")
    stream.write(f"npurun run: {os.path.basename(script)} raised {type(error).__name__} {DEBUG_HINT}\n")


def _user_frame(filename: str) -> bool:
    if _in_npurun(filename) or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return not any(part in path for part in (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)) \
        and not path.startswith(os.path.dirname(os.__file__) + os.sep)
