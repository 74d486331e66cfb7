"""Writing files without following links npurun did not make. Plain Python (standard library only).

Rules (every file and folder npurun itself names: the model_dir lock and side files, kernel_meta,
kernel_cache, dumps, traces, exception dumps, profiling output):
  - A symbolic link where npurun writes is refused with `PlantedLinkError` naming the link and
    its target: nothing is written, truncated or deleted through it. The folders the user names
    (model_dir, debug_dir, op_compiler_cache_dir, dump_path, ...) are the user's and may be links;
    what npurun creates inside them may not.
  - Whole files are written to a private temporary name in the same folder (`mkstemp`: O_EXCL,
    owner-only) and renamed over the destination (`os.replace` replaces a link, it never writes
    through one), so a reader sees the old file or the new one, never half of one.
  - Files kept open (the lock, appended indexes) are opened with O_NOFOLLOW and O_NONBLOCK (a
    planted FIFO does not hang the open) and must be regular files with one hard link.
  - Emptying or removing a folder never descends through a link: the folder is opened with
    O_NOFOLLOW and its entries removed relative to that descriptor; a link inside is unlinked
    itself, its target untouched.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class PlantedLinkError(OSError):
    """A symbolic link (or another non-regular file) stands where npurun writes."""


def _link_error(path: str, what: str) -> PlantedLinkError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return PlantedLinkError(
        errno.ELOOP, f"{what} {path} is a symbolic link (to {target}); npurun does not write, truncate or delete "
                     f"through a link it did not make. Remove the link, or point the option at a real folder", path)


def _not_regular(path: str, what: str) -> PlantedLinkError:
    return PlantedLinkError(errno.EINVAL, f"{what} {path} is not a regular file; npurun writes only regular files "
                                          f"there. Remove it", path)


def refuse_link(path: str, what: str = "file") -> None:
    """Raise PlantedLinkError when `path` is a symbolic link (nothing there, or a real file, is fine)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise _link_error(path, what)


def make_dir(path: str, what: str = "folder") -> str:
    """Create `path` (and its parents) unless it exists; refuse it when it is a link. Returns `path`."""
    refuse_link(path, what)
    os.makedirs(path, exist_ok=True)
    info = os.lstat(path)  # again: a link planted between the check and makedirs
    if stat.S_ISLNK(info.st_mode):
        raise _link_error(path, what)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, f"{what} {path} is not a directory", path)
    return path


def make_dirs_under(base: str, relative: str, what: str = "folder") -> str:
    """Create `base/relative` one component at a time, refusing any component that is a link
    (`base` itself is not checked: it is the caller's). Returns the full path."""
    path = base
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        path = os.path.join(path, part)
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise _link_error(path, what)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, f"{what} {path} is not a directory", path)
    return path


def _umask() -> int:
    """The process's umask, read without changing it (os.umask sets it: a race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


@contextlib.contextmanager
def replacing(path: str, mode: str = "w", what: str = "file", encoding: str | None = "utf-8", newline=None):
    """A file object writing a private temporary file that replaces `path` when the block ends
    without an error (removed otherwise). Refuses `path` when it is a link."""
    refuse_link(path, what)
    folder = os.path.dirname(path) or "."
    # `<name>.tmp<random>`: visible (not a dot file), so a leftover is seen and globbed like TensorFlow's own.
    fd, temporary = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # the permissions open() would give a new file
        binary = "b" in mode
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else encoding,
                       newline=None if binary else newline) as handle:
            fd = -1
            yield handle
        refuse_link(path, what)
        os.replace(temporary, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text(path: str, text: str, what: str = "file", encoding: str = "utf-8") -> None:
    """Write `text` to `path` through a private temporary file (see `replacing`)."""
    with replacing(path, "w", what, encoding) as handle:
        handle.write(text)


def write_bytes(path: str, data: bytes, what: str = "file") -> None:
    """Write `data` to `path` through a private temporary file (see `replacing`)."""
    with replacing(path, "wb", what) as handle:
        handle.write(data)


def open_fd(path: str, flags: int, what: str = "file", mode: int = 0o666) -> int:
    """`os.open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode)`; refuses a link, a file that
    is not a regular file (a FIFO, a device) and a regular file with other hard links."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ELOOP or (error.errno == errno.EMLINK and os.path.islink(path)):
            raise _link_error(path, what) from None
        if error.errno in (errno.ENXIO, errno.ENODEV, errno.EISDIR):  # a FIFO with no reader, a socket, ...
            raise _not_regular(path, what) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, what)
        if info.st_nlink > 1:
            raise PlantedLinkError(errno.EMLINK, f"{what} {path} has {info.st_nlink} hard links (another name for "
                                                 f"the same file elsewhere); npurun does not write through a link it "
                                                 f"did not make. Remove it", path)
        if _NONBLOCK:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: str, what: str = "file", encoding: str = "utf-8", newline=None):
    """A text file object appending to `path` (created when missing), opened as `open_fd` says."""
    fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, what)
    return os.fdopen(fd, "a", encoding=encoding, newline=newline)


def empty_dir(path: str, what: str = "folder") -> None:
    """Remove everything inside `path`, keeping `path`; refuses a linked `path`, never descends
    through a link inside (a link is removed itself)."""
    refuse_link(path, what)
    try:
        dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise _link_error(path, what) from None
        raise
    try:
        with os.scandir(dir_fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for name, is_dir in names:
            if is_dir:
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def remove(path: str) -> None:
    """Remove `path`: a folder with everything in it, a file, or a link itself (never its target)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # fd-based: does not follow links inside
    else:
        os.unlink(path)


def unguessable_suffix() -> str:
    """`.<16 random hex digits>`, for the end of a file name TensorFlow opens itself and follows links
    at (an event file: `events.out.tfevents.<second>.<host><suffix>`, opened with fopen): a name
    nobody can predict, so nobody can plant a link under it beforehand."""
    import secrets

    return "." + secrets.token_hex(8)


def read_at_most(path: str, limit: int) -> bytes:
    """At most `limit` bytes of `path` (a config file, a script: files npurun reads whole). Opened
    with O_NONBLOCK, so a FIFO nobody writes to reads as empty instead of blocking the open forever;
    a FIFO with a writer (`--config <(...)`) is then read as usual, and /dev/zero stops at `limit`."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    try:
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
