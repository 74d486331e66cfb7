"""One model_dir shared by the ranks that are given the chief's path: checked at start-up, and when the
chief resumes.

Plain Python (no TensorFlow).

At start-up (every NPUEstimator training of a collective job, first run or resume):
- the chief creates `<model_dir>/.npurun_shared/start.<token>`, `token` 16 random hex digits drawn
  once per chief process (so a marker left by an earlier job, even one that was killed, never
  matches; the chief removes such stale markers, and its own at exit), *before* its training graph
  exists;
- the start-up barrier (the all-reduce every rank runs before training, hooks.py) carries, from the
  chief only, a digest of its absolute model_dir path and the token (`payload`); every other rank
  adds zeros, so after the barrier every rank holds the chief's values. The chief reaches the
  barrier only after its marker exists, so no rank can look before it is written;
- a rank whose absolute model_dir path is the chief's then polls for that marker in its own
  model_dir for up to the start-up timeout (HCCL_CONNECT_TIMEOUT: a shared file system may show a
  new file late); if it never appears this rank does not see the chief's directory under the same
  path (a local disk per host): `SharedModelDirError` naming the rank, the host, the path, and that
  a shared model_dir is required. A rank given another path (one model_dir per rank, a common
  Ascend layout) is allowed; such a job cannot resume, which the resume check below refuses.

Why: only the chief writes checkpoints, and a resumed job continues from them on every rank. A rank
whose model_dir is another directory (a local disk per host) starts from nothing after a
preemption, computes its own step target and stops out of step with the chief. So a resumed job
requires a shared model_dir (NFS, a PVC, a cluster file system), and it is checked before training.

On resume (files only, before any server starts):
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
import hashlib
import logging
import os
import secrets
import socket
import stat
import time
from dataclasses import dataclass
from typing import Optional

from .. import safe_files
from ..reporting import UserFixableError

DIRNAME = ".npurun_shared"
ENV = "NPURUN_CHECK_SHARED_MODEL_DIR"


class SharedModelDirError(UserFixableError, RuntimeError):
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


# ---- start-up: every rank given the chief's path sees the chief's directory -----------------------------
PAYLOAD_SIZE = 7  # [announced, 3 x 16 bits of the path digest, 3 x 16 bits of the token], int32 each
_MARKER = "start."
logger = logging.getLogger("npurun")


@dataclass
class _Announcement:
    path: str  # absolute model_dir path
    rank_id: int
    token: str = ""  # the chief's, 12 hex digits (48 bits: 3 chunks of 16)


_announced: Optional[_Announcement] = None
_chief_token: Optional[str] = None  # drawn once per chief process
_chief_markers: list = []


def _digest_chunks(text: str) -> list:
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()
    return [int.from_bytes(digest[i:i + 2], "big") for i in (0, 2, 4)]


def _token_chunks(token: str) -> list:
    return [int(token[i:i + 4], 16) for i in (0, 4, 8)]


def _remove_stale_markers(path: str, keep: str) -> None:
    """Remove start markers of earlier chiefs (regular files named as npurun names them; a link is
    unlinked itself, never followed). One chief per model_dir at a time (the model_dir lock)."""
    for name in os.listdir(path):
        if name.startswith(_MARKER) and name != keep and len(name) == len(keep):
            full = os.path.join(path, name)
            try:
                if not stat.S_ISDIR(os.lstat(full).st_mode):
                    os.unlink(full)
            except OSError:
                pass


def announce(model_dir: str, rank_id: Optional[int], rank_size: int) -> None:
    """Before a collective job's training: the chief writes its start-up marker; every rank records its
    absolute model_dir path for `payload` / `verify`. Nothing for one rank, a ps task, or the check off."""
    global _announced, _chief_token
    _announced = None
    if rank_id is None or rank_size < 2 or not enabled() or not model_dir:
        return
    path = os.path.abspath(model_dir)
    if rank_id != 0:
        _announced = _Announcement(path, rank_id)
        return
    if _chief_token is None:
        _chief_token = secrets.token_hex(6)
    folder = safe_files.make_dirs_under(safe_files.make_dir(path, "model_dir"), DIRNAME, "folder")
    name = _MARKER + _chief_token
    marker = os.path.join(folder, name)
    if not os.path.lexists(marker):
        _remove_stale_markers(folder, name)
        fd = safe_files.open_fd(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, "start-up marker", 0o644)
        try:
            os.write(fd, f"npurun start-up marker of the chief (pid {os.getpid()} on {socket.gethostname()})\n"
                         .encode())
        finally:
            os.close(fd)
        if marker not in _chief_markers:
            _chief_markers.append(marker)
            atexit.register(_remove, marker)
    _announced = _Announcement(path, 0, _chief_token)


def payload() -> list:
    """This process's contribution to the start-up barrier: the chief's announcement, zeros otherwise."""
    if _announced is None or _announced.rank_id != 0:
        return [0] * PAYLOAD_SIZE
    return [1, *_digest_chunks(_announced.path), *_token_chunks(_announced.token)]


def verify(summed, layout, timeout: float) -> None:
    """After the start-up barrier (`summed`: the payloads added over the ranks): a non-chief rank whose
    model_dir path is the chief's waits up to `timeout` for the chief's marker in it, else
    SharedModelDirError."""
    if _announced is None or _announced.rank_id == 0 or summed is None:
        return
    values = [int(v) for v in list(summed)]
    if len(values) != PAYLOAD_SIZE or values[0] != 1:
        return  # the chief announced nothing (its check is off, or it trains no Estimator)
    path = _announced.path
    if values[1:4] != _digest_chunks(path):
        logger.debug("model_dir %s is not the chief's path: one model_dir per rank (such a job cannot resume)",
                     path)
        return
    token = "".join(f"{v:04x}" for v in values[4:7])
    marker = os.path.join(path, DIRNAME, _MARKER + token)
    deadline = time.monotonic() + timeout
    while not os.path.isfile(marker):
        if time.monotonic() >= deadline:
            chief = layout.cluster[layout.rank_tasks[0][0]][0] if layout.rank_tasks else "?"
            raise SharedModelDirError(
                f"rank {_announced.rank_id} of {layout.rank_size} (host {socket.gethostname()}, {layout.address}): "
                f"model_dir {path!r} is the chief's model_dir path, but this host does not see the chief's "
                f"directory there: the start-up marker the chief (rank 0, {chief}) wrote in it "
                f"({DIRNAME}/{_MARKER}{token}) did not appear here within the start-up timeout of {timeout:g} s "
                f"(HCCL_CONNECT_TIMEOUT). A shared model_dir is required (the same directory on every host: NFS, a "
                f"PVC, a cluster file system): only the chief writes checkpoints and every rank resumes from them. "
                f"For one model_dir per rank, give each rank its own path (such a job cannot resume). "
                f"({ENV}=0 skips this check)")
        time.sleep(0.2)


def refuse_failed(summed, layout) -> None:
    """After the verdict all-reduce (one flag per rank, summed): when another rank failed the check,
    this rank stops too, naming it (that rank's own error says what it saw)."""
    if summed is None:
        return
    failed = [r for r, flag in enumerate(list(summed)) if int(flag)]
    if not failed or layout.rank_id in failed:
        return
    shown = ", ".join(f"rank {r}" for r in failed[:8]) + (" ..." if len(failed) > 8 else "")
    path = _announced.path if _announced is not None else "?"
    raise SharedModelDirError(
        f"rank {layout.rank_id} of {layout.rank_size} (host {socket.gethostname()}, {layout.address}): {shown} "
        f"{'is' if len(failed) == 1 else 'are'} given the chief's model_dir path {path!r} but {'does' if len(failed) == 1 else 'do'} not see the "
        f"chief's directory there (see that rank's error): a shared model_dir is required (the same directory on "
        f"every host: NFS, a PVC, a cluster file system), or give each rank its own path. Stopping at the start-up")
