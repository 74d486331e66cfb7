"""Every rank must see the chief's model_dir: a file handshake at the start of distributed training.

Plain Python (no TensorFlow).

Why: only the chief writes checkpoints, and a resumed job continues from them on every rank. A rank
whose model_dir is another directory (a local disk per host) starts from nothing after a
preemption, computes its own step target and stops out of step with the chief. So a shared
model_dir (NFS, a PVC, a cluster file system) is required, and checked before training starts.

How (no TensorFlow runtime needed, works before the servers start):
- a non-chief rank creates `<model_dir>/.npurun_shared/rank<R>.<random>` and waits, within the
  start-up timeout (HCCL_CONNECT_TIMEOUT), for `ack.<same name>` to appear there;
- the chief, for the same time in a background thread, creates `ack.<name>` for every rank token
  it sees (so it only ever acknowledges files that reached *its* directory);
- an acknowledged rank removes its token and the acknowledgement. A rank that sees no
  acknowledgement in time raises `SharedModelDirError`: its model_dir is not the chief's.
Files are created with O_CREAT | O_EXCL | O_NOFOLLOW (never through a planted link) and only
names npurun made are removed. `NPURUN_CHECK_SHARED_MODEL_DIR=0` turns the check off (for a job
that will never resume, with a model_dir per host).
"""
from __future__ import annotations

import os
import secrets
import threading
import time
from typing import Optional

DIRNAME = ".npurun_shared"
ENV = "NPURUN_CHECK_SHARED_MODEL_DIR"


class SharedModelDirError(RuntimeError):
    """A non-chief rank does not see the chief's model_dir."""


def enabled() -> bool:
    return os.environ.get(ENV, "").strip() not in ("0", "false", "no", "off")


def _create(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.close(fd)


def _token_dir(model_dir: str) -> str:
    path = os.path.join(model_dir, DIRNAME)
    os.makedirs(model_dir, exist_ok=True)
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    if os.path.islink(path) or not os.path.isdir(path):
        raise SharedModelDirError(f"{path} is not a directory npurun made (a link or a file): remove it")
    return path


class _Acknowledger(threading.Thread):
    def __init__(self, path: str, seconds: float):
        super().__init__(name="npurun-shared-model-dir", daemon=True)
        self.path, self.until = path, time.monotonic() + seconds
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(0.2) and time.monotonic() < self.until:
            try:
                names = os.listdir(self.path)
            except OSError:
                return
            present = set(names)
            for name in names:
                if name.startswith("rank") and f"ack.{name}" not in present:
                    try:
                        _create(os.path.join(self.path, f"ack.{name}"))
                    except OSError:
                        pass
                elif name.startswith("ack.rank") and name[4:] not in present:
                    try:  # its rank saw it and removed its token (or an earlier run's leftover)
                        os.unlink(os.path.join(self.path, name))
                    except OSError:
                        pass


_chief: Optional[_Acknowledger] = None


def check(model_dir: str, rank_id: Optional[int], rank_size: int, timeout: float) -> None:
    """The chief (rank 0) acknowledges the other ranks' tokens for `timeout` s (in the background);
    another rank waits up to `timeout` s for its acknowledgement, else SharedModelDirError."""
    global _chief
    if rank_id is None or rank_size < 2 or not enabled() or not model_dir:
        return
    path = _token_dir(model_dir)
    if rank_id == 0:
        if _chief is None or not _chief.is_alive():
            _chief = _Acknowledger(path, timeout)
            _chief.start()
        return
    name = f"rank{rank_id}.{secrets.token_hex(8)}"
    _create(os.path.join(path, name))
    ack = os.path.join(path, f"ack.{name}")
    deadline = time.monotonic() + timeout
    try:
        while not os.path.exists(ack):
            if time.monotonic() >= deadline:
                raise SharedModelDirError(
                    f"rank {rank_id} of {rank_size}: the chief (rank 0) did not see this rank's file in model_dir "
                    f"{model_dir!r} within the start-up timeout of {timeout:g} s (HCCL_CONNECT_TIMEOUT): this rank's "
                    f"model_dir is not the chief's. A shared model_dir (the same directory on every host: NFS, a "
                    f"PVC, a cluster file system) is required for resume: only the chief writes checkpoints and "
                    f"every rank resumes from them. ({ENV}=0 skips this check for a job that never resumes)")
            time.sleep(0.1)
    finally:
        for leftover in (os.path.join(path, name), ack):  # the token first: then the chief drops the ack
            try:
                os.unlink(leftover)
            except OSError:
                pass
