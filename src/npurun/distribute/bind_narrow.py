"""Narrowing TensorFlow's wildcard listening sockets to the job's own address. Plain Python (no TensorFlow).

TensorFlow 2.21's gRPC servers (`tf.distribute.Server`, the tf.data service) bind `[::]:<port>`
(then `0.0.0.0:<port>`) in C++, with no knob (see exposure.py). The only place left to choose the
address is the bind() call itself: `bind_shim.c` (shipped with npurun) is an LD_PRELOAD library whose
bind() rewrites a wildcard address to `NPURUN_BIND_ADDRESS` (IPv4: 0.0.0.0 -> a.b.c.d and
[::] -> ::ffff:a.b.c.d; IPv6: [::] -> the address) and passes every other bind through (the port,
0 included, is kept). `NPURUN_BIND_ANY=1` keeps the wildcard.

How it is built and found: the system C compiler (`cc`, else `gcc`) compiles the shipped source on
first use into `$XDG_CACHE_HOME/npurun` (else `~/.cache/npurun`), a folder npurun makes owner-only
and refuses when it is a link or another user's; the library is named by a hash of the source (a
changed source is a new file) and is written under a private temporary name then renamed, so no
link planted there is followed and no half-written library is ever loaded. Why not a prebuilt
binary: npurun ships as pure Python (one wheel for every platform), and the source is 70 lines
anyone can read. Without a compiler nothing is narrowed and exposure.py's warning stays.

An LD_PRELOAD only takes effect at exec: `npurun launch` sets it for each task it starts, `npurun
run` / `npurun train` under a cluster re-exec themselves once with it (`reexec_if_needed`, called
by cluster.narrow_binds);
a plain `python train.py` cannot be narrowed after it started.
"""
from __future__ import annotations

import ctypes
import hashlib
import ipaddress
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from typing import Optional

from .. import safe_files

ADDRESS_ENV = "NPURUN_BIND_ADDRESS"
ANY_ENV = "NPURUN_BIND_ANY"
_REEXEC_ENV = "NPURUN_BIND_REEXEC"  # set on the re-exec'd process: never re-exec twice
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bind_shim.c")
_SYMBOL = "npurun_bind_narrowing"


def opted_out(env=None) -> bool:
    return (env if env is not None else os.environ).get(ANY_ENV, "").strip() in ("1", "true", "yes")


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "npurun")


def library_path(build: bool = True) -> Optional[str]:
    """The path of the compiled shim (compiled now when missing and `build`); None without a compiler
    or when the cache folder is unusable."""
    try:
        with open(_SOURCE, "rb") as handle:
            source = handle.read()
    except OSError:
        return None
    folder = _cache_dir()
    path = os.path.join(folder, f"bind-{hashlib.sha256(source).hexdigest()[:16]}.so")
    try:
        safe_files.make_dir(folder, "npurun's cache folder")
        info = os.lstat(folder)
        if info.st_uid != os.getuid():
            return None
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(folder, 0o700)
        safe_files.refuse_link(path, "the bind-narrowing library")
        if os.path.lexists(path):
            found = os.lstat(path)
            if stat.S_ISREG(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o022:
                return path
            return None  # not ours to load (someone else's, writable by others): no narrowing, the warning stays
    except OSError:
        return None
    if not build:
        return None
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return None
    fd, temporary = tempfile.mkstemp(prefix="bind.tmp", suffix=".so", dir=folder)
    os.close(fd)
    try:
        done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", temporary, _SOURCE, "-ldl"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        if done.returncode != 0:
            return None
        os.chmod(temporary, 0o700)
        safe_files.refuse_link(path, "the bind-narrowing library")
        os.replace(temporary, path)
        return path
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def active() -> bool:
    """Whether this process's binds are narrowed (the shim is loaded and has a job address)."""
    try:
        probe = getattr(ctypes.CDLL(None), _SYMBOL)
    except (AttributeError, OSError):
        return False
    probe.restype = ctypes.c_int
    return bool(probe())


def preload_env(address: str, env: dict) -> bool:
    """Add the shim (first in LD_PRELOAD) and `address` to `env`; False (env unchanged) when opted
    out, `address` is not an IP literal, or no library can be built."""
    if opted_out(env) or not _ip_literal(address):
        return False
    library = library_path()
    if library is None:
        return False
    current = env.get("LD_PRELOAD", "")
    parts = [p for p in current.replace(":", " ").split() if p and p != library]
    env["LD_PRELOAD"] = " ".join([library] + parts)
    env[ADDRESS_ENV] = address
    return True


def _ip_literal(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def local_address(host: str) -> Optional[str]:
    """`host` (a name or literal, brackets allowed) as one address of this machine, or None."""
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    # IPv4 first: an IPv6 job address cannot narrow a fallback bind of 0.0.0.0 (it passes through)
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    for family, _, _, _, sockaddr in infos:
        candidate = sockaddr[0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((candidate, 0))  # binds only where the address is this machine's
            except OSError:
                continue
        return candidate
    return None


def reexec_if_needed(address_of_task) -> None:
    """Under a cluster, re-exec this command once with the shim preloaded (before TensorFlow is
    imported). `address_of_task()` gives the task's host from the cluster, or None when there is no
    cluster. Does nothing (returns) when narrowing is active, opted out, or not possible."""
    if opted_out() or os.environ.get(_REEXEC_ENV) or active():
        return
    try:
        host = address_of_task()
    except Exception:  # noqa: BLE001 - a bad cluster is reported later, by the code that reads it
        return
    if not host:
        return
    address = local_address(host)
    if address is None:
        return
    env = dict(os.environ)
    if not preload_env(address, env):
        return
    env[_REEXEC_ENV] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + _original_argv(), env)


def _original_argv() -> list[str]:
    """This interpreter's command line after the executable (`-m npurun run ...` or a script)."""
    return list(sys.orig_argv[1:])  # Python 3.10+ (npurun's floor): the arguments as the interpreter got them
