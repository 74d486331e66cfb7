"""Checkpoint files: saving with retention, and restoring the newest complete checkpoint.

Crash safety. TensorFlow's V2 checkpoint writer writes each file under a `.tempstate<random>`
name and renames it when complete, the data file before the index; the `checkpoint` state file
is replaced atomically too. So a process killed at any moment leaves either a complete
`model.ckpt-N` (index present) or only `.tempstate` leftovers. On top of that:

  - files are written in the order data+index, then the state file, then old checkpoints are
    deleted: the state file never names a checkpoint that is not there yet;
  - restoring tries checkpoints newest first (by step, whether or not the state file was updated
    before the kill) and falls back to the next one if a restore fails, with a warning;
  - `.tempstate` leftovers of a killed save are removed when the next saver starts.

Retention follows tf.compat.v1.train.Saver's rules: keep the `max_to_keep` newest (None or 0:
all); a checkpoint pushed out of that window is kept anyway when it was written at least
`keep_checkpoint_every_n_hours` after the last one kept that way (the first: after the saver
started). Wall time comes from `clock` (module attribute, replaceable in tests).
"""
from __future__ import annotations

import glob
import logging
import os
import re
import time
from typing import Callable, List, Optional, Sequence, Tuple

import tensorflow as tf

logger = logging.getLogger("npurun")

PREFIX = "model.ckpt"
STATE_FILE = "checkpoint"
FINISHED_FILE = "npurun_train_finished"
clock: Callable[[], float] = time.time

_STEP = re.compile(r"-(\d+)$")


def checkpoint_step(prefix: str) -> Optional[int]:
    """The global step in a checkpoint name such as `model.ckpt-1200`, or None."""
    match = _STEP.search(prefix)
    return int(match.group(1)) if match else None


def _has_files(prefix: str) -> bool:
    return os.path.exists(prefix + ".index") and bool(glob.glob(glob.escape(prefix) + ".data-*-of-*"))


def candidates(model_dir: str) -> List[str]:
    """Checkpoint prefixes in `model_dir` that have an index and data, newest (highest step) first.

    Found both through the state file and by listing the directory, so a checkpoint written just
    before a kill (state file not yet updated) is found too.
    """
    found = {p[:-len(".index")] for p in glob.glob(os.path.join(glob.escape(model_dir), "*.index"))}
    state = tf.compat.v1.train.get_checkpoint_state(model_dir)
    if state is not None:
        found.update(state.all_model_checkpoint_paths)
        if state.model_checkpoint_path:
            found.add(state.model_checkpoint_path)
    # get_checkpoint_state already joined the state file's relative paths to model_dir.
    prefixes = [p for p in {os.path.normpath(p) for p in found} if _has_files(p)]
    return sorted(prefixes, key=lambda p: (checkpoint_step(p) or -1, os.path.getmtime(p + ".index")), reverse=True)


def is_readable(prefix: str) -> bool:
    """Whether the checkpoint's index and data files open (cheap: tensors are not read)."""
    try:
        tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError):
        return False
    return _has_files(prefix)


def latest_checkpoint(model_dir: str) -> Optional[str]:
    """The newest readable checkpoint in `model_dir`, or None."""
    if not model_dir or not os.path.isdir(model_dir):
        return None
    for prefix in candidates(model_dir):
        if is_readable(prefix):
            return prefix
        logger.warning("Skipping unreadable checkpoint %s", prefix)
    return None


def resolve(path: str) -> Optional[str]:
    """A checkpoint prefix from a prefix or a directory (its newest readable checkpoint)."""
    if os.path.isdir(path):
        return latest_checkpoint(path)
    return path if is_readable(path) else None


def mark_finished(model_dir: str, step: int) -> None:
    """Record that a train() call ended normally at `step` (atomically: write, then rename)."""
    path = os.path.join(model_dir, FINISHED_FILE)
    with open(path + ".tmp", "w") as marker:
        marker.write(f"{step}\n")
    os.replace(path + ".tmp", path)


def finished_step(model_dir: str) -> Optional[int]:
    """The global step at which the last train() call ended normally, or None."""
    try:
        with open(os.path.join(model_dir, FINISHED_FILE)) as marker:
            return int(marker.read().strip())
    except (OSError, ValueError):
        return None


def restore(savers: Sequence, sess, prefix: str) -> None:
    """Restore `prefix` with the first of `savers` whose keys it holds.

    Savers go from the most to the least complete (e.g. with, then without, the input position),
    so a checkpoint written by a less complete saver restores too.
    """
    for saver in savers[:-1]:
        try:
            saver.restore(sess, prefix)
            return
        except tf.errors.NotFoundError:
            continue  # a key of this saver is not in the checkpoint: try the next one
        except tf.errors.OpError as err:
            # E.g. an input position saved by a different input pipeline; the variables may still
            # restore with the next saver (a broken checkpoint fails there too).
            logger.warning("Restoring %s with its input position failed (%s); reading the input from its start",
                           prefix, str(err).splitlines()[0])
    savers[-1].restore(sess, prefix)


def restore_newest(savers: Sequence, sess, model_dir: str, quarantine: bool = False,
                   resume_input: bool = False) -> Optional[str]:
    """Restore the newest checkpoint that restores (see `restore`); None when the directory has none.

    Checkpoints hold the input pipeline's position when it can be saved. With `resume_input`
    it is restored too, unless the checkpoint is the one a train() call ended at normally
    (`mark_finished`): a restart after a crash continues the same data sequence, while a new
    train() call reads its input from the start, as tf.estimator did.

    With `quarantine` (the chief, before training) the files of a checkpoint that fails to
    restore get the suffix `.unreadable`, so that later restores and `latest_checkpoint` skip it.
    Raises RuntimeError when checkpoints exist but none restores (starting from scratch would
    silently move the global step back).
    """
    tried = []
    finished = finished_step(model_dir)
    for prefix in candidates(model_dir):
        use = savers if resume_input and checkpoint_step(prefix) != finished else savers[-1:]
        try:
            restore(use, sess, prefix)
        except (tf.errors.OpError, ValueError, IndexError) as err:
            logger.warning("Checkpoint %s does not restore (%s); trying an older one", prefix,
                           str(err).splitlines()[0] if str(err) else type(err).__name__)
            tried.append(prefix)
            if quarantine:
                for name in glob.glob(glob.escape(prefix) + ".*"):
                    os.replace(name, name + ".unreadable")
            continue
        return prefix
    if tried:
        raise RuntimeError(f"None of the checkpoints in {model_dir} restores: {', '.join(tried)}")
    return None


class CheckpointWriter:
    """Saves `model.ckpt-<step>` with a Saver and applies the retention rules."""

    def __init__(self, savers: Sequence, model_dir: str, max_to_keep: Optional[int], keep_every_n_hours: float,
                 listeners: Sequence = ()):
        """`savers`: tried in order; one whose save fails (an input pipeline that cannot be
        serialised) is dropped for the rest of training, with a warning."""
        self._savers = list(savers)
        self._dir = model_dir
        self._max = max_to_keep or None
        self._keep_secs = keep_every_n_hours * 3600.0 if keep_every_n_hours else None
        self._listeners = list(listeners)
        self.last_saved_step: Optional[int] = None
        os.makedirs(model_dir, exist_ok=True)
        for leftover in glob.glob(os.path.join(glob.escape(model_dir), "*.tempstate*")):
            os.remove(leftover)  # a save killed half-way; never part of a checkpoint
        self._kept, last_preserved = self._recover()
        self._next_keep_time = (last_preserved or clock()) + (self._keep_secs or 0.0)

    def _recover(self) -> Tuple[List[Tuple[str, float]], Optional[float]]:
        """The checkpoints still subject to retention, oldest first, with their save times."""
        state = tf.compat.v1.train.get_checkpoint_state(self._dir)
        managed: List[Tuple[str, float]] = []
        last_preserved = None
        if state is not None:
            times = list(state.all_model_checkpoint_timestamps)
            for i, path in enumerate(state.all_model_checkpoint_paths):
                path = os.path.normpath(path)  # already joined to the directory
                if _has_files(path):
                    managed.append((path, times[i] if i < len(times) else os.path.getmtime(path + ".index")))
            last_preserved = state.last_preserved_timestamp or None
        newest = max((checkpoint_step(p) or -1 for p, _ in managed), default=-1)
        # Checkpoints written after the last state update (a kill in between) join the window.
        for path in reversed(candidates(self._dir)):
            if (checkpoint_step(path) or -1) > newest:
                managed.append((path, os.path.getmtime(path + ".index")))
        return managed, last_preserved

    def begin(self) -> None:
        for listener in self._listeners:
            listener.begin()

    def end(self, sess, step: int) -> None:
        for listener in self._listeners:
            listener.end(sess, step)

    def save(self, sess, step: int) -> bool:
        """Save at `step`; True when a listener asks training to stop."""
        for listener in self._listeners:
            listener.before_save(sess, step)
        prefix = os.path.normpath(os.path.join(self._dir, f"{PREFIX}-{step}"))
        logger.info("Saving checkpoint for step %d into %s", step, prefix)
        savers = self._savers
        while True:
            try:
                savers[0].save(sess, os.path.join(self._dir, PREFIX), global_step=step, write_meta_graph=False,
                                     write_state=False)
                break
            except tf.errors.OpError as err:
                if len(savers) == 1:
                    raise
                logger.warning("Checkpoints will not hold the input pipeline's position (it cannot be saved: %s); "
                               "a restart re-reads the input from its start", str(err).splitlines()[0])
                self._savers.pop(0)
                savers = self._savers
        self._kept = [(p, t) for p, t in self._kept if p != prefix] + [(prefix, clock())]
        evicted = self._evict()
        self._write_state()
        for path in evicted:
            for name in glob.glob(glob.escape(path) + ".*"):
                os.remove(name)
        self.last_saved_step = step
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(sess, step)) or stop
        return stop

    def _evict(self) -> List[str]:
        evicted = []
        while self._max is not None and len(self._kept) > self._max:
            path, saved_at = self._kept.pop(0)
            if self._keep_secs is not None and saved_at >= self._next_keep_time:
                self._next_keep_time = saved_at + self._keep_secs
                continue
            evicted.append(path)
        return evicted

    def _write_state(self) -> None:
        """Write the state file with paths relative to the model directory (`model.ckpt-N`), as
        tf.compat.v1.train.Saver does, so TensorFlow resolves them from any working directory.

        The directory is passed to TensorFlow as an absolute path: given a relative one, TensorFlow
        re-relativises the (already relative) paths against it and writes `../model.ckpt-N`.
        """
        paths = [os.path.relpath(p, self._dir) for p, _ in self._kept]
        tf.compat.v1.train.update_checkpoint_state(
            os.path.abspath(self._dir), paths[-1], all_model_checkpoint_paths=paths,
            all_model_checkpoint_timestamps=[t for _, t in self._kept],
            last_preserved_timestamp=self._next_keep_time - (self._keep_secs or 0.0))
