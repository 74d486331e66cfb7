"""A resumed distributed job needs one model_dir shared by every rank: checked when the chief resumes.

Plain Python (no TensorFlow).

Why: only the chief writes checkpoints, and a resumed job continues from them on every rank. A rank
whose model_dir is another directory (a local disk per host) starts from nothing after a
preemption, computes its own step target and stops out of step with the chief. So a resumed job
requires a shared model_dir (NFS, a PVC, a cluster file system), and it is checked before training.

How (files only, before any server starts):
- every non-chief rank creates `<model_dir>/.npurun_shared/rank<R>.<pid>.<random>` when its
  training starts and removes it when the process ends;
- the chief, when its model_dir holds a checkpoint (the job resumes), waits up to the start-up
  timeout (HCCL_CONNECT_TIMEOUT) until every other rank's file has appeared in *its* model_dir,
  else `SharedModelDirError` names the ranks that do not share it, and the job stops before
  anything is restored. A first run (no checkpoint yet) is not delayed and not refused: it
  cannot go wrong this way, and one model_dir per rank is a common Ascend layout.
Files are created with O_CREAT | O_EXCL | O_NOFOLLOW (never through a planted link) and only names
npurun made are removed. `NPURUN_CHECK_SHARED_MODEL_DIR=0` turns the check off.
"""
from __future__ import annotations

import atexit
import glob
import os
import secrets
import time
from typing import Optional

DIRNAME = ".npurun_shared"
ENV = "NPURUN_CHECK_SHARED_MODEL_DIR"


class SharedModelDirError(RuntimeError):
    """The chief resumes, and some ranks do not see its model_dir."""


def enabled() -> bool:
    return os.environ.get(ENV, "").strip() not in ("0", "false", "no", "off")


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


def resumes(model_dir: str) -> bool:
    """Whether `model_dir` holds a checkpoint (its state file or a checkpoint index)."""
    return os.path.isfile(os.path.join(model_dir, "checkpoint")) or bool(
        glob.glob(os.path.join(glob.escape(model_dir), "model.ckpt-*.index")))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def check(model_dir: str, rank_id: Optional[int], rank_size: int, timeout: float) -> None:
    """See the module doc: a non-chief rank leaves its file; a resuming chief waits for them all."""
    if rank_id is None or rank_size < 2 or not enabled() or not model_dir:
        return
    path = _token_dir(model_dir)
    if rank_id != 0:
        token = os.path.join(path, f"rank{rank_id}.{os.getpid()}.{secrets.token_hex(6)}")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        os.close(fd)
        atexit.register(_remove, token)
        return
    if not resumes(model_dir):
        return
    deadline = time.monotonic() + timeout
    while True:
        names = os.listdir(path)
        missing = [r for r in range(1, rank_size) if not any(n.startswith(f"rank{r}.") for n in names)]
        if not missing:
            return
        if time.monotonic() >= deadline:
            shown = ", ".join(f"rank {r}" for r in missing[:8]) + (" ..." if len(missing) > 8 else "")
            raise SharedModelDirError(
                f"rank 0 of {rank_size} (the chief) resumes from the checkpoint in model_dir {model_dir!r}, but "
                f"{shown} did not show up in it within the start-up timeout of {timeout:g} s "
                f"(HCCL_CONNECT_TIMEOUT): their model_dir is not this one. A shared model_dir (the same directory "
                f"on every host: NFS, a PVC, a cluster file system) is required for resume: only the chief writes "
                f"checkpoints and every rank resumes from them. ({ENV}=0 skips this check)")
        time.sleep(0.2)
