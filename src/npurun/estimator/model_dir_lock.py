"""One training job per model_dir: a lock file naming its holder.

The chief of a train() call holds `model_dir/npurun_train.lock` for the call's duration. The
lock is an exclusive `flock` on that file, which the kernel releases when the holder dies (kill
-9 included), so a lock left by a dead process is taken over automatically; the file's text
(host, pid, start time) names the holder for the error a second job gets and for the warning
when a dead holder's lock is taken over. The file is never deleted (deleting a lock file lets two
processes lock two different files); a clean release empties it.

Readers (evaluate, predict, get_variable_value, export) take no lock.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import time

logger = logging.getLogger("npurun")

LOCK_FILE = "npurun_train.lock"


class ModelDirInUseError(RuntimeError):
    """Another live training job holds the model_dir."""


def _describe(holder: dict) -> str:
    started = holder.get("started")
    since = time.strftime(" since %Y-%m-%d %H:%M:%S UTC", time.gmtime(started)) if started else ""
    return f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}{since}"


def _read_holder(handle) -> dict:
    """The holder the lock file names; {} when it names none (empty, or text npurun did not write:
    another tool's pid file, a damaged file)."""
    handle.seek(0)
    try:
        holder = json.loads(handle.read() or "{}")
    except ValueError:
        return {}
    return holder if isinstance(holder, dict) else {}


def _make_dir(model_dir: str) -> None:
    try:
        os.makedirs(model_dir, exist_ok=True)
    except NotADirectoryError:
        parent, blocker = model_dir, model_dir
        while parent and parent != os.path.dirname(parent):
            if os.path.exists(parent) and not os.path.isdir(parent):
                blocker = parent
            parent = os.path.dirname(parent)
        raise NotADirectoryError(errno.ENOTDIR, f"cannot create model_dir {model_dir}: {blocker} is not a "
                                                f"directory") from None


@contextlib.contextmanager
def hold(model_dir: str, enabled: bool = True):
    """Hold the model_dir's training lock inside the block (nothing when not `enabled`).

    Raises ModelDirInUseError naming the holder when another live process holds it.
    """
    if not enabled:
        yield
        return
    _make_dir(model_dir)
    path = os.path.join(model_dir, LOCK_FILE)
    try:
        handle = open(path, "a+")
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        raise PermissionError(error.errno, f"model_dir {model_dir} is not writable ({error.strerror}): training "
                                           f"writes its lock file {LOCK_FILE} and its checkpoints there; train "
                                           f"into a writable model_dir (evaluate, predict and get_variable_value "
                                           f"only read it)", path) from None
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(handle)
            raise ModelDirInUseError(
                f"model_dir {model_dir} is in use by another training job ({_describe(holder)}; lock file {path}). "
                f"Two jobs writing one model_dir overwrite each other's checkpoints: stop that job, or give this "
                f"one another model_dir") from None
        previous = _read_holder(handle)
        if previous:
            logger.warning("Taking over the training lock of %s: that process ended without releasing it "
                           "(killed?)", _describe(previous))
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}))
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()  # released cleanly: the next holder has nothing to warn about
            handle.flush()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()
