"""What npurun and TensorFlow print: quiet by default, detail on request.

Plain Python (TensorFlow is imported only by `import_tensorflow`, and only when asked).

- `import_tensorflow()` imports TensorFlow with its C++ start-up banner held back: the
  "All log messages before absl::InitializeLog()" line and the oneDNN / CPU-feature INFO lines are
  printed from native static initialisers before TensorFlow reads TF_CPP_MIN_LOG_LEVEL, so no
  environment variable hides them (measured on TF 2.21). The import runs with file descriptor 2
  redirected to a temporary file; afterwards every captured line is replayed except those INFO
  lines (and the banner's continuation line). TF_CPP_MIN_LOG_LEVEL defaults to 1 (C++ INFO off)
  unless the user set it or asked for detail with `-v` / NPURUN_VERBOSE=1, which also shows the
  banner.
- The "npurun" logger follows the verbosity of TensorFlow's and absl's Python loggers: after
  `tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)` or
  `absl.logging.set_verbosity(absl.logging.INFO)` npurun's INFO lines (loss, steps/sec,
  checkpoints, evaluation results) appear as tf.estimator's did, through TensorFlow's own
  handler. `enable_logging()` shows them without touching TensorFlow's settings. A logging
  configuration of the user's (a handler on the root or "npurun" logger) wins over both.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import warnings

from ._native_stderr import NATIVE_LINE as _NATIVE_LINE
from ._native_stderr import LineFilter
from ._native_stderr import keep_native_line as _keep_native_line

VERBOSE_ENV = "NPURUN_VERBOSE"
DEBUG_ENV = "NPURUN_DEBUG"

_TRUE = ("1", "true", "yes", "on")


def _has_nvidia_device() -> bool:
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def verbose() -> bool:
    """Detail asked for (`-v` sets NPURUN_VERBOSE=1)."""
    return flag(VERBOSE_ENV)


_level_set_here = False  # TF_CPP_MIN_LOG_LEVEL came from npurun, not from the user


def set_verbose() -> None:
    """Detail from here on (`-v`): npurun's own TF_CPP_MIN_LOG_LEVEL default gives way, the user's stays."""
    global _level_set_here
    os.environ[VERBOSE_ENV] = "1"
    if _level_set_here:
        del os.environ["TF_CPP_MIN_LOG_LEVEL"]
        _level_set_here = False


def native_min_level() -> int:
    """The C++ log level in effect: the user's TF_CPP_MIN_LOG_LEVEL, else 0 when verbose, else 1."""
    value = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    if value is not None and value.strip().isdigit():
        return int(value)
    return 0 if verbose() else 1


def keep_native_line(line: str, min_level: int) -> bool:
    """Whether a line TensorFlow's native code printed should reach the user at `min_level`."""
    return _keep_native_line(line, min_level, _has_nvidia_device())


_stderr_filter = None  # (the filter process, the real stderr's descriptor) once started


def filter_native_stderr_for_process() -> None:
    """For a command whose process is the user's script (`npurun run`): from here to the end of the
    process, file descriptor 2 is a pipe to a filter process (`_native_stderr.py`) that passes on all
    but the native lines `keep_native_line` drops. TensorFlow prints those at any point of a script, not
    only at npurun's own calls: the no-GPU cuInit line where a script or tf-keras first lists devices,
    tf-keras's graph-mutation warning at every fit. Nothing is started with detail asked for (`-v`,
    TF_CPP_MIN_LOG_LEVEL=0). Called before TensorFlow is imported (no threads to fork under)."""
    global _stderr_filter
    import atexit
    import subprocess

    min_level = native_min_level()
    if min_level <= 0 or _stderr_filter is not None:
        return
    try:
        sys.stderr.flush()
        real = os.dup(2)
        try:
            read_end, write_end = _terminal_pair() if os.isatty(2) else os.pipe()
        except (OSError, ImportError):
            read_end, write_end = os.pipe()
        process = subprocess.Popen(
            [sys.executable, "-I", os.path.join(os.path.dirname(__file__), "_native_stderr.py"), str(min_level),
             "1" if _has_nvidia_device() else "0"],
            stdin=read_end, stdout=real, stderr=real, close_fds=True)
    except OSError:  # no descriptor 2, no room for a process: TensorFlow's lines stay as they are
        return
    os.close(read_end)
    os.dup2(write_end, 2)
    os.close(write_end)
    _stderr_filter = (process, real)
    atexit.register(_stop_stderr_filter)


def _terminal_pair():
    """A pseudo-terminal for a stderr that is a terminal, so the script still sees one there (progress
    displays, colours): raw, so bytes pass unchanged, and the real terminal's size."""
    import fcntl
    import termios

    reader, writer = os.openpty()
    try:
        modes = termios.tcgetattr(writer)
        modes[1] &= ~termios.OPOST  # output as written: no newline translation
        termios.tcsetattr(writer, termios.TCSANOW, modes)
        fcntl.ioctl(writer, termios.TIOCSWINSZ, fcntl.ioctl(2, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        pass
    return reader, writer


def _stop_stderr_filter() -> None:
    """At exit: descriptor 2 is the real stderr again, and the filter has passed on what it was sent."""
    global _stderr_filter
    if _stderr_filter is None:
        return
    process, real = _stderr_filter
    _stderr_filter = None
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(real, 2)  # closes this process's end of the pipe: the filter reads to its end and exits
    os.close(real)
    try:
        process.wait(timeout=5)  # a child process the script left running may hold the pipe open
    except Exception:  # noqa: BLE001 - exiting anyway
        pass


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def show_npurun_warnings_plainly() -> None:
    """npurun's own warnings as one line, `npurun: UserWarning: <message>`: Python's default display adds the
    file and line of npurun's code that raised it and that line's source (`contribute(options, mode, plan)`),
    which say nothing to a script's user. Other warnings (a script's, TensorFlow's) are shown as Python shows
    them. For `npurun run`, whose process is the script's."""
    original = warnings.showwarning
    if getattr(original, "_npurun_plain", False):
        return

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if not os.path.abspath(str(filename)).startswith(_PACKAGE_DIR):
            return original(message, category, filename, lineno, file, line)
        stream = file if file is not None else sys.stderr
        try:
            stream.write(f"npurun: {category.__name__}: {message}\n")
        except (OSError, ValueError):  # a closed stderr, as Python's own display tolerates
            pass

    showwarning._npurun_plain = True
    warnings.showwarning = showwarning


def import_tensorflow():
    """`import tensorflow`, without the start-up banner unless detail was asked for (see module doc)."""
    if "tensorflow" in sys.modules:  # imported by the user's code before npurun
        _quiet_first_discovery()
        return sys.modules["tensorflow"]
    min_level = native_min_level()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", str(min_level))
    if min_level <= 0:
        import tensorflow

        return tensorflow
    with _native_stderr_filtered(min_level):
        import tensorflow
    # No device listing here: listing devices makes TensorFlow read TF_XLA_FLAGS, once per process,
    # before npurun's plan could set them (the compile cache folder); see `list_gpus`.
    _quiet_first_discovery()
    return tensorflow


_discovered = False  # TensorFlow's devices were listed through `list_gpus` in this process


def list_gpus() -> list:
    """`tf.config.list_physical_devices("GPU")`; the first call (TensorFlow's device discovery)
    runs with the no-GPU cuInit line filtered, as the start-up banner is.

    Discovery makes TensorFlow read TF_XLA_FLAGS (once per process), so nothing calls this at
    import: the session plan calls it after the compile cache contributor has set its flags.
    """
    global _discovered
    tensorflow = import_tensorflow()
    min_level = native_min_level()
    if _discovered or min_level <= 0 or _has_nvidia_device():
        _discovered = True
        return tensorflow.config.list_physical_devices("GPU")
    with _native_stderr_filtered(min_level):
        gpus = tensorflow.config.list_physical_devices("GPU")
    _discovered = True
    return gpus


# TensorFlow's native entry points that list devices (its discovery, which logs the cuInit line once
# per process): a graph session, the eager context, `tf.config.list_physical_devices`, and
# `device_lib.list_local_devices` (`tf.test.is_gpu_available`). Each is read as a module attribute
# when called, so a wrapper there covers every Python path to it.
_DISCOVERY_ENTRIES = (
    ("tensorflow.python.client.pywrap_tf_session", "TF_NewSessionRef"),
    ("tensorflow.python.pywrap_tfe", "TFE_NewContext"),
    ("tensorflow.python.pywrap_tfe", "TF_ListPhysicalDevices"),
    ("tensorflow.python.client._pywrap_device_lib", "list_devices"),
)


def _quiet_first_discovery() -> None:
    """The first device discovery, by whichever entry a script reaches first (its own `tf.Session`,
    `tf.test.is_gpu_available()`, ...), runs with the no-GPU cuInit line filtered, as `list_gpus`'s
    does; later calls go straight through. Nothing changes when detail is asked for or a GPU node exists,
    nor under `npurun run`, whose whole-process filter already drops that line wherever it is printed."""
    import importlib

    if _stderr_filter is not None:
        return
    for module_name, attribute in _DISCOVERY_ENTRIES:
        try:
            module = importlib.import_module(module_name)
        except (ImportError, AttributeError):  # another TensorFlow layout: its discovery is left as it is
            continue
        original = getattr(module, attribute, None)
        if original is None or getattr(original, "_npurun_discovery", False):
            continue
        setattr(module, attribute, _first_discovery_filtered(original))


def _first_discovery_filtered(original):
    def entry(*args, **kwargs):
        global _discovered
        if _discovered:
            return original(*args, **kwargs)
        min_level = native_min_level()
        if min_level <= 0 or _has_nvidia_device():
            _discovered = True
            return original(*args, **kwargs)
        with _native_stderr_filtered(min_level):
            result = original(*args, **kwargs)
        _discovered = True
        return result

    entry._npurun_discovery = True
    entry.__name__ = getattr(original, "__name__", "entry")
    entry.__wrapped__ = original
    return entry


class _native_stderr_filtered:
    """Redirects file descriptor 2 into a temporary file, then replays the lines worth keeping."""

    def __init__(self, min_level: int):
        self.min_level = min_level

    def __enter__(self):
        try:
            self.fd = sys.stderr.fileno() if hasattr(sys.stderr, "fileno") else 2
        except (OSError, ValueError):  # pytest's capture and notebooks give streams without a descriptor
            self.fd = 2
        sys.stderr.flush()
        self.saved = os.dup(self.fd)
        self.capture = tempfile.TemporaryFile()
        os.dup2(self.capture.fileno(), self.fd)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, self.fd)
        os.close(self.saved)
        self.capture.seek(0)
        text = self.capture.read().decode("utf-8", "replace")
        self.capture.close()
        kept = self._kept(text)
        if kept:
            sys.stderr.write("".join(kept))
            sys.stderr.flush()
        return False

    def _kept(self, text: str) -> list:
        return _kept_native_lines(text.splitlines(keepends=True), self.min_level)


def _kept_native_lines(lines: list, min_level: int) -> list:
    """The lines `keep_native_line` keeps, with the blocks of lines that a dropped routine warning opens
    (`_native_stderr.ROUTINE_BLOCKS`, `ROUTINE_BLOCK_LINES`) dropped with it, as the whole-run filter does."""
    kept = LineFilter(min_level, _has_nvidia_device())
    text = b"".join(kept.feed(line.encode("utf-8", "replace")) for line in lines) + kept.close()
    return text.decode("utf-8", "replace").splitlines(keepends=True)


def _reason_line(message: str):
    """The line of a TensorFlow error message that says why (TensorFlow 2's graph errors put it last,
    above the `[[{{node NAME}}]]` line, after "Graph execution error:" and a traceback)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("[[{{node ")]
    return lines[-1] if lines else None


class native_lines_of_handled_error(_native_stderr_filtered):
    """Around a run whose TensorFlow error the caller catches and reports itself (one npurun line):
    TensorFlow's native lines about that same error (`OP_REQUIRES failed ...: <message>`, the
    rendezvous abort with it, the `[[{{node NAME}}]]` line after them) are dropped; every other line
    the block printed is replayed as usual. Without an error, or with detail asked for, all is kept."""

    def __init__(self):
        super().__init__(native_min_level())

    def __enter__(self):
        if self.min_level <= 0:
            self.fd = None
            return self
        return super().__enter__()

    def __exit__(self, exc_type, exc, tb):
        if self.fd is None:
            return False
        self.handled = _reason_line(getattr(exc, "message", None) or "")
        return super().__exit__(exc_type, exc, tb)

    def _kept(self, text: str) -> list:
        kept, dropping = [], False
        for line in text.splitlines(keepends=True):
            if self.handled and _NATIVE_LINE.match(line) and self.handled in line:
                dropping = True  # this line, and the node line TensorFlow prints under it
                continue
            if dropping and line.strip().startswith("[[{{node "):
                continue
            dropping = False
            kept.append(line)
        return _kept_native_lines(kept, self.min_level)


# --- the "npurun" logger ---------------------------------------------------------------------

_FORMAT = "%(levelname)s:%(name)s:%(message)s"  # TensorFlow's Python logger's format
_enabled_handler = None


def _on_terminal(stream) -> bool:
    return stream is not None and (any(stream is s for s in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__))
                                   or getattr(stream, "name", None) in ("<stderr>", "<stdout>"))


def _prints_on_terminal(handler) -> bool:
    """Whether a root handler writes on stderr/stdout: absl's (installed by `absl.app.run` /
    `tf.compat.v1.app.run`) unless it logs to a file of its own, or a StreamHandler of the user's
    `logging.basicConfig()`."""
    inner = getattr(handler, "python_handler", None)  # absl's ABSLHandler wraps its PythonHandler
    if inner is not None:
        name = getattr(getattr(inner, "stream", None), "name", "<stderr>")
        return not isinstance(name, str) or name.startswith("<")
    return _on_terminal(getattr(handler, "stream", None))


class _SkipShown(logging.Filter):
    """On the root logger's terminal handlers: drops a record npurun's own handler has just shown."""

    def filter(self, record):
        return not getattr(record, "npurun_shown", False)


_SKIP_SHOWN = _SkipShown()


def _skip_on_root_terminal_handlers(record) -> None:
    """Mark `record` shown; the root logger's handlers that print on the terminal skip marked records."""
    record.npurun_shown = True
    for handler in logging.getLogger().handlers:
        if _SKIP_SHOWN not in handler.filters and _prints_on_terminal(handler):
            handler.addFilter(_SKIP_SHOWN)


class _TensorFlowLinesOnce(logging.Filter):
    """On TensorFlow's Python logger: a record its own handler prints on the terminal ("INFO:tensorflow:...")
    is not printed a second time by the root logger's (absl's after `app.run`, in glog's form). TensorFlow
    gives its logger a handler only when the root logger had none at its import, which is before `app.run`
    adds absl's."""

    def filter(self, record):
        logger = logging.getLogger("tensorflow")
        if logger.propagate and any(_prints_on_terminal(handler) and record.levelno >= handler.level
                                    for handler in logger.handlers):
            _skip_on_root_terminal_handlers(record)
        return True


TENSORFLOW_LINES_ONCE = _TensorFlowLinesOnce()


class OnceStreamHandler(logging.StreamHandler):
    """A StreamHandler for the "npurun" logger whose lines appear once: after showing a record it
    marks it, and the root logger's handlers that print on the terminal too (absl's after
    `app.run`, the user's `basicConfig()`) skip marked records. npurun's line is the one kept, in
    npurun's format (absl's form of it looks like TensorFlow's C++ INFO lines). A root handler
    writing to a file still gets every record."""

    def emit(self, record):
        super().emit(record)
        if logging.getLogger("npurun").propagate:
            _skip_on_root_terminal_handlers(record)


def enable_logging(level: int = logging.INFO, stream=None) -> logging.Handler:
    """Show npurun's log lines (loss and step, steps/sec, checkpoints, evaluation results) on
    `stream` (default stderr) from `level` up, once: when a handler of the root logger prints them
    on the terminal already (absl's after `app.run`), that one does. Idempotent; returns the handler
    it added."""
    global _enabled_handler
    logger = logging.getLogger("npurun")
    if _enabled_handler is None:
        _enabled_handler = OnceStreamHandler(stream or sys.stderr)
        _enabled_handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(_enabled_handler)
    elif stream is not None:
        _enabled_handler.setStream(stream)
    logger.setLevel(level)
    return _enabled_handler


def disable_logging() -> None:
    """Undo `enable_logging` (npurun's lines follow TensorFlow's and absl's verbosity again)."""
    global _enabled_handler
    logger = logging.getLogger("npurun")
    if _enabled_handler is not None:
        logger.removeHandler(_enabled_handler)
        _enabled_handler = None
    logger.setLevel(logging.NOTSET)


def _followed_level():
    """INFO (or DEBUG) when TensorFlow's or absl's Python logger was set to it, else None."""
    levels = []
    for name in ("tensorflow", "absl"):
        existing = logging.Logger.manager.loggerDict.get(name)
        if isinstance(existing, logging.Logger) and existing.level != logging.NOTSET:
            levels.append(existing.level)
    low = min(levels, default=logging.WARNING)
    return low if low <= logging.INFO else None


class _NpurunLogger(logging.Logger):
    """The "npurun" logger: with no level of its own, it takes INFO from TensorFlow / absl (see module doc).

    Logger.getEffectiveLevel reads `.level` attribute by attribute up the hierarchy, so the level is
    a property; Python clears its per-logger level caches on every setLevel, which is how
    set_verbosity reaches it.
    """

    @property
    def level(self):
        if self._own_level != logging.NOTSET:
            return self._own_level
        return _followed_level() or logging.NOTSET

    @level.setter
    def level(self, value):
        self._own_level = value


class _Bridge(logging.Handler):
    """Prints npurun's records when no handler of the user's would: through TensorFlow's handler
    (its lines look like TensorFlow's own) or, without one, on stderr in the same format."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter(_FORMAT))

    def emit(self, record):
        logger = logging.getLogger("npurun")
        if logging.getLogger().handlers or any(h is not self for h in logger.handlers):
            return
        handlers = logging.getLogger("tensorflow").handlers
        if handlers:
            for handler in handlers:
                if record.levelno >= handler.level:
                    handler.handle(record)
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must not raise
            self.handleError(record)


def user_configured(logger=None) -> bool:
    """Whether the "npurun" logger has a handler or a level of the user's (not just the bridge)."""
    logger = logger or logging.getLogger("npurun")
    own_level = getattr(logger, "_own_level", logger.level)
    return own_level != logging.NOTSET or any(not isinstance(h, _Bridge) for h in logger.handlers)


def install() -> None:
    """Make "npurun" an _NpurunLogger with the bridge (called once when npurun is imported)."""
    global _level_set_here
    if "tensorflow" not in sys.modules and "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        # TensorFlow reads this once, when it is imported: its C++ INFO lines stay off for a script
        # that imports npurun first (the start-up banner too, when npurun imports TensorFlow).
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = str(native_min_level())
        _level_set_here = True
    manager = logging.Logger.manager
    existing = manager.loggerDict.get("npurun")
    if isinstance(existing, _NpurunLogger):
        return
    logger = _NpurunLogger("npurun")
    logger.manager, logger.parent = manager, logging.getLogger()
    if isinstance(existing, logging.Logger):  # created before npurun was imported: keep its set-up
        logger.level, logger.handlers = existing.level, list(existing.handlers)
        logger.propagate, logger.disabled = existing.propagate, existing.disabled
    manager.loggerDict["npurun"] = logger
    for name, child in list(manager.loggerDict.items()):
        if name.startswith("npurun.") and isinstance(child, logging.Logger) and child.parent in (existing, logger.parent):
            child.parent = logger
    logger.addHandler(_Bridge())
    manager._clear_cache()
