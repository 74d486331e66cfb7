"""One training job per model_dir: a lock file naming its holder.

The chief of a train() call holds `model_dir/npurun_train.lock` for the call's duration. The
lock is an exclusive `flock` on that file, which the kernel releases when the holder dies (kill
-9 included), so a lock left by a dead process is taken over automatically; the file's text
(host, pid, start time) names the holder for the error a second job gets and for the warning
when a dead holder's lock is taken over. The file is never deleted (deleting a lock file lets two
processes lock two different files); a clean release empties it.

The file is created owner-only (0600; an older, wider one is narrowed when this user owns it) and
opened with O_NOFOLLOW (`npurun.safe_files`): a link planted under its name is refused with an
error naming it, its target untouched. Only users who can open the file can take the lock; when
the holder wrote no record (another user's process holding an old 0644 file through a read-only
descriptor, or another tool), the error says so and names the process from /proc/locks when the
system shows it, instead of inventing a pid.

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

from .. import safe_files
from ..reporting import UserFixableError

logger = logging.getLogger("npurun")

LOCK_FILE = "npurun_train.lock"


class ModelDirInUseError(UserFixableError, RuntimeError):
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


def _lock_holders(fd: int) -> list:
    """The pids /proc/locks shows holding a flock on the file of `fd` ([] where it shows none)."""
    info = os.fstat(fd)
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and "->" not in fields and fields[1] == "FLOCK" and fields[5] == key:
            with contextlib.suppress(ValueError):
                pids.append(int(fields[4]))
    return pids


def _user_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            uid = next(int(line.split()[1]) for line in status if line.startswith("Uid:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def _owner_of(path: str) -> str | None:
    """The user owning `path` when that is not this user, else None."""
    try:
        uid = os.lstat(path).st_uid
    except OSError:
        return None
    if uid == os.geteuid():
        return None
    try:
        import pwd

        return "user " + pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def _describe_unnamed(fd: int) -> str:
    """The holder of a lock whose file names none: what the system shows, said plainly."""
    pids = [pid for pid in _lock_holders(fd) if pid != os.getpid()]
    if pids:
        who = ", ".join(f"pid {pid}" + (f" (user {_user_of(pid)})" if _user_of(pid) else "") for pid in pids)
        return (f"held by {who} on this host, which wrote no holder record: not an npurun training job (or one "
                f"starting this instant; any process that can open the file can hold its lock)")
    return ("held by another user's process or another tool, which wrote no holder record; cannot read its owner "
            "(any process that can open the file can hold its lock)")


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
        fd = safe_files.open_fd(path, os.O_RDWR | os.O_CREAT, "the model_dir's training lock file", mode=0o600)
    except OSError as error:
        if isinstance(error, safe_files.PlantedLinkError) or error.errno not in (errno.EACCES, errno.EPERM,
                                                                                 errno.EROFS):
            raise
        owner = _owner_of(path)
        if owner is not None:
            raise PermissionError(error.errno, f"the training lock file {path} belongs to {owner} and this user "
                                               f"cannot open it ({error.strerror}): another user trains into "
                                               f"model_dir {model_dir}; train into a model_dir of your own",
                                  path) from None
        raise PermissionError(error.errno, f"model_dir {model_dir} is not writable ({error.strerror}): training "
                                           f"writes its lock file {LOCK_FILE} and its checkpoints there; train "
                                           f"into a writable model_dir (evaluate, predict and get_variable_value "
                                           f"only read it)", path) from None
    handle = os.fdopen(fd, "r+", encoding="utf-8", errors="replace")
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o600)  # an older npurun made it 0644: readable, so lockable, by every user
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(handle)
            if not holder:
                raise ModelDirInUseError(
                    f"model_dir {model_dir} is locked: its training lock file {path} is {_describe_unnamed(fd)}. "
                    f"Stop that process, or train into another model_dir") from None
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
