"""Checkpoints: saving with retention, and restoring the newest complete, readable checkpoint
(the file-level facts: names, listing, readability, pins, the state file, are in checkpoint_files.py).

Crash safety. TensorFlow's V2 checkpoint writer writes each file under a `.tempstate<random>`
name and renames it when complete, the data file before the index. On top of that:

  - files are written in the order data+index, then the state file (written here under a
    temporary name and renamed, so it is always whole), then old checkpoints are deleted: the
    state file never names a checkpoint that is not complete;
  - listing, eviction and the state file tolerate files that vanish underneath them (a reader
    never locks; one writer per model_dir is enforced by model_dir_lock.py);
  - restoring tries checkpoints newest first (by step, whether or not the state file was updated
    before a kill) and falls back to the next one if a restore fails, with a warning naming the
    file and the reason. Nothing is renamed or deleted because of a read error (it may be
    transient: a busy network file system);
  - readers (`latest_checkpoint`, `resolve`: get_variable_value, export, warm start) call a
    checkpoint readable when all its tensors read (the data, with TensorFlow's checksums, not
    only the index), the input position included;
  - a checkpoint whose input position is damaged (DataLossError) is skipped like any damaged
    one: resuming from an older intact checkpoint is exact, resuming without the position is not;
  - `.tempstate` leftovers of a killed save are removed when the next saver starts.

Saving. A save that fails is an error (CheckpointSaveError; DiskFullError naming the directory,
the bytes needed and free), never a silent downgrade: whether the input position can be saved
is decided once, before training (`CheckpointWriter.begin`), and a warning says so when not. A
checkpoint is not written when a variable is NaN/Inf (NonFiniteVariableError names the first),
so the last good checkpoint stays the newest.

Retention follows tf.compat.v1.train.Saver's rules: keep the `max_to_keep` newest (None or 0:
all); a checkpoint pushed out of that window is kept anyway when it was written at least
`keep_checkpoint_every_n_hours` after the last one kept that way (the first: after the saver
started). Wall time comes from `clock` (module attribute, replaceable in tests). A new checkpoint
is complete before the oldest is deleted, so keep_checkpoint_max=N needs room for N+1.
"""
from __future__ import annotations

import errno
import glob
import logging
import os
import shutil
import time
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from .. import logs, safe_files
from ..reporting import UserFixableError
from .checkpoint_files import (PREFIX, STATE_FILE, candidates, checkpoint_step, data_files,  # noqa: F401
                               first_line, has_files, is_readable, mtime, pinned, read_state, remove_quietly,
                               relists, remove_stale_pins, warn_incomplete, why_unreadable, write_state_file)

logger = logging.getLogger("npurun")

FINISHED_FILE = "npurun_train_finished"
clock: Callable[[], float] = time.time


class CheckpointSaveError(UserFixableError, RuntimeError):
    """A checkpoint could not be saved; the newest complete one stays named in the state file."""


class CheckpointRestoreError(UserFixableError, RuntimeError):
    """The model_dir holds checkpoints and none of them restores (damaged, or of another model)."""


class DiskFullError(CheckpointSaveError):
    """No room on the model_dir's file system for the next checkpoint (or an export)."""


def is_disk_full(err: BaseException) -> bool:
    """Whether a write failed because the file system is full (or a quota is reached)."""
    # Not every ResourceExhaustedError: an out-of-memory one is that class too.
    return getattr(err, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(err) \
        or "Disk quota" in str(err)


class NonFiniteVariableError(CheckpointSaveError):
    """A variable holds NaN or Inf: the checkpoint is not written, the last good one stays newest."""


def latest_checkpoint(model_dir: str) -> Optional[str]:
    """The newest readable checkpoint in `model_dir`, or None; a warning names each one skipped."""
    if not model_dir or not os.path.isdir(model_dir):
        return None
    chosen, vanished = None, False
    for _ in relists():
        listed = candidates(model_dir)
        vanished = not listed and bool(candidates(model_dir))  # listed between a save and an eviction
        for prefix in listed:
            reason = why_unreadable(prefix)
            if reason is None:
                chosen = prefix
                break
            if has_files(prefix):  # not merely evicted by a concurrent training job
                logger.warning("Skipping the damaged checkpoint %s (%s); using an older one", prefix, reason)
            else:
                vanished = True
        if chosen is not None or not vanished:
            break  # else every candidate was evicted while we read: list the directory again
    warn_incomplete(model_dir, chosen)
    return chosen


def read_newest(model_dir: str, read: Callable[[str], object]):
    """`read(prefix)` of the newest readable checkpoint; when that checkpoint vanishes before it is
    read (a training job evicted it), of the next newest. Raises ValueError when there is none."""
    for _ in relists():
        prefix = latest_checkpoint(model_dir)
        if prefix is None:
            break
        try:
            with pinned(prefix) as linked:
                return read(linked)
        except (tf.errors.NotFoundError, OSError):
            if has_files(prefix):
                raise
    raise ValueError(f"Could not find trained model in model_dir: {model_dir} (no checkpoint: train the model "
                     f"first)")  # tf.estimator's sentence first, for code that matches on it


def resolve(path: str) -> Optional[str]:
    """A checkpoint prefix from a prefix or a directory (its newest readable checkpoint)."""
    if os.path.isdir(path):
        return latest_checkpoint(path)
    reason = why_unreadable(path)
    if reason is not None:
        logger.warning("The checkpoint %s does not read (%s)", path, reason)
        return None
    return path


def mark_finished(model_dir: str, step: int) -> None:
    """Record that a train() call ended normally at `step` (atomically: write, then rename). Where
    that fails (a full disk), the checkpoint is already complete: a warning, not an error."""
    path = os.path.join(model_dir, FINISHED_FILE)
    try:
        safe_files.write_text(path, f"{step}\n", "training-finished marker")
    except OSError as err:  # a planted link too (PlantedLinkError, naming it): nothing written through it
        logger.warning("Could not record in %s that training ended at step %d (%s); the next train() call will "
                       "continue the input where this one stopped instead of from its start", path, step, err)


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
    so a checkpoint written by a less complete saver restores too. A damaged input position
    (DataLossError) is raised like damaged variables: the caller falls back to an older,
    intact checkpoint rather than resuming inexactly.
    """
    for saver in savers[:-1]:
        try:
            saver.restore(sess, prefix)
            return
        except tf.errors.NotFoundError:
            continue  # a key of this saver is not in the checkpoint: try the next one
        except (tf.errors.DataLossError, tf.errors.InternalError, tf.errors.OutOfRangeError):
            raise  # damaged bytes (a checksum, a variant that no longer decodes, a truncated file)
        except tf.errors.OpError as err:
            # An input position saved by a different input pipeline; the variables may still
            # restore with the next saver (a broken checkpoint fails there too).
            logger.warning("The input position in %s does not fit this input pipeline (%s); reading the input "
                           "from its start", prefix, first_line(err))
    savers[-1].restore(sess, prefix)


# TensorFlow's Saver.restore wording for variables whose shape or dtype differ from the checkpoint's (an
# InvalidArgumentError "Restoring from checkpoint failed. This is most likely due to a mismatch between the current
# graph and the graph from the checkpoint..."), which tf.estimator raised as is.
GRAPH_MISMATCH = "a mismatch between the current graph and the graph"


def restore_newest(savers: Sequence, sess, model_dir: str, quarantine: bool = False,
                   resume_input: bool = False) -> Optional[str]:
    """Restore the newest checkpoint that restores (see `restore`); None when the directory has none.

    Checkpoints hold the input pipeline's position when it can be saved. With `resume_input`
    it is restored too, unless the checkpoint is the one a train() call ended at normally
    (`mark_finished`): a restart after a crash continues the same data sequence, while a new
    train() call reads its input from the start, as tf.estimator did.

    A checkpoint that fails to restore is skipped with a warning and left in place (`quarantine`
    is accepted for compatibility and does nothing: a read error may be transient). One that
    vanished in between (evicted by the training job) is skipped silently.
    Raises RuntimeError when checkpoints exist but none restores (starting from scratch would
    silently move the global step back), and TensorFlow's InvalidArgumentError at once when the newest one
    does not fit the model's variables (a shape changed): the model changed, so older ones would not fit either.
    """
    tried = []
    finished = finished_step(model_dir)
    chosen = None
    for _ in relists():
        listed = candidates(model_dir)
        vanished = not listed and bool(candidates(model_dir))  # listed between a save and an eviction
        for prefix in listed:
            if prefix in tried:
                continue
            use = savers if resume_input and checkpoint_step(prefix) != finished else savers[-1:]
            try:
                with pinned(prefix) as linked:
                    restore(use, sess, linked)
            except (tf.errors.OpError, ValueError, IndexError, OSError) as err:
                if isinstance(err, tf.errors.InvalidArgumentError) and GRAPH_MISMATCH in str(err):
                    raise  # the model changed, not the file: the older checkpoints do not fit it either
                if not has_files(prefix):
                    vanished = True
                    continue  # evicted while we read it (readers run beside training)
                logger.warning("Checkpoint %s does not restore (%s); trying an older one", prefix, first_line(err))
                tried.append(prefix)
                continue
            chosen = prefix
            break
        if chosen is not None or not vanished:
            break
    warn_incomplete(model_dir, chosen)
    if chosen is not None:
        return chosen
    if tried:
        raise CheckpointRestoreError(f"None of the checkpoints in {model_dir} restores ({', '.join(tried)}; the "
                                     f"warnings above give each reason). They are left in place: if the read errors "
                                     f"were transient (a network file system), try again; to start from scratch, use "
                                     f"another model_dir")
    return None


class CheckpointWriter:
    """Saves `model.ckpt-<step>` with a Saver and applies the retention rules."""

    def __init__(self, savers: Sequence, model_dir: str, max_to_keep: Optional[int], keep_every_n_hours: float,
                 listeners: Sequence = (), input_state=None, finite_check=None):
        """`savers`: the most complete first (with the input position), then variables only.
        `input_state`: the tensor serialising the input position (run once in `begin` to decide
        whether the input can be saved), or None. `finite_check`: (bool tensor, names) from
        `finite_check`, run before each save, or None."""
        self._savers = list(savers)
        self._dir = model_dir
        self._max = max_to_keep or None
        self._keep_secs = keep_every_n_hours * 3600.0 if keep_every_n_hours else None
        self._listeners = list(listeners)
        self._input_state = input_state
        self._finite_check = finite_check
        self._finite_exempt = None
        self.last_saved_step: Optional[int] = None
        self.last_saved: Optional[str] = None
        os.makedirs(model_dir, exist_ok=True)
        for leftover in glob.glob(os.path.join(glob.escape(model_dir), "*.tempstate*")):
            remove_quietly(leftover)  # a save killed half-way; never part of a checkpoint
        remove_stale_pins(model_dir)
        self._kept, last_preserved = self._recover()
        self._next_keep_time = (last_preserved or clock()) + (self._keep_secs or 0.0)

    def _recover(self) -> Tuple[List[Tuple[str, float]], Optional[float]]:
        """The checkpoints still subject to retention, oldest first, with their save times."""
        state = read_state(self._dir)
        managed: List[Tuple[str, float]] = []
        last_preserved = None
        if state is not None:
            times = list(state.all_model_checkpoint_timestamps)
            for i, path in enumerate(state.all_model_checkpoint_paths):
                path = os.path.normpath(path)  # already joined to the directory
                if has_files(path):
                    managed.append((path, times[i] if i < len(times) else mtime(path + ".index")))
            last_preserved = state.last_preserved_timestamp or None
        newest = max((checkpoint_step(p) or -1 for p, _ in managed), default=-1)
        # Checkpoints written after the last state update (a kill in between) join the window.
        for path in reversed(candidates(self._dir)):
            if (checkpoint_step(path) or -1) > newest:
                managed.append((path, mtime(path + ".index")))
        return managed, last_preserved

    @property
    def saves_input_position(self) -> bool:
        return len(self._savers) > 1

    def begin(self, sess=None) -> None:
        """Before training: decide once whether checkpoints can hold the input position."""
        if sess is not None and self._input_state is not None and len(self._savers) > 1:
            try:
                with logs.native_lines_of_handled_error():  # the one warning below says it
                    sess.run(self._input_state.op)
            except tf.errors.OpError as err:
                logger.warning("Checkpoints will not hold the input pipeline's position (it cannot be saved: %s); "
                               "a restart re-reads the input from its start", first_line(err))
                self._savers = self._savers[1:]
        for listener in self._listeners:
            listener.begin()

    def end(self, sess, step: int) -> None:
        for listener in self._listeners:
            listener.end(sess, step)

    def save(self, sess, step: int) -> bool:
        """Save at `step`; True when a listener asks training to stop."""
        for listener in self._listeners:
            listener.before_save(sess, step)
        if self._finite_check is not None:
            self._check_finite(sess, step)
        prefix = os.path.normpath(os.path.join(self._dir, f"{PREFIX}-{step}"))
        logger.info("Saving checkpoint for step %d into %s", step, prefix)
        try:
            self._savers[0].save(sess, os.path.join(self._dir, PREFIX), global_step=step, write_meta_graph=False,
                                 write_state=False)
        except (tf.errors.OpError, OSError) as err:
            for leftover in glob.glob(glob.escape(prefix) + ".*tempstate*"):
                remove_quietly(leftover)
            raise self._save_error(prefix, err) from err
        kept = [(p, t) for p, t in self._kept if p != prefix] + [(prefix, clock())]
        previous = (list(self._kept), self._next_keep_time)
        self._kept = kept
        evicted = self._evict()
        try:
            self._write_state()
        except OSError as err:
            self._kept, self._next_keep_time = previous  # nothing evicted: the old state file still holds
            raise self._save_error(prefix, err) from err
        for path in evicted:
            # The index first: a reader then sees at most a data file without its index, which is
            # also what a save in progress looks like, not a checkpoint missing its data.
            for name in sorted(glob.glob(glob.escape(path) + ".*"), key=lambda name: not name.endswith(".index")):
                remove_quietly(name)
        self.last_saved_step = step
        self.last_saved = prefix
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(sess, step)) or stop
        return stop

    def _check_finite(self, sess, step: int) -> None:
        flags, names, trainable = self._finite_check
        values = sess.run(flags)
        if self._finite_exempt is None:
            # A non-trainable variable that is NaN/Inf at the first check was made so (e.g. a "best
            # value so far" initialised to Inf): only becoming non-finite is an error for those.
            self._finite_exempt = ~values & ~trainable
        values = values | self._finite_exempt
        if not values.all():
            first = names[int(values.argmin())]
            raise NonFiniteVariableError(
                f"The variable {first} holds NaN or Inf at global step {step}; the checkpoint is not written, "
                f"so {self._newest_text()} stays the newest. Lower the learning rate, clip the gradients, or "
                f"enable loss scaling (precision options)")

    def _newest_text(self) -> str:
        newest = [p for p, _ in self._kept if has_files(p)]
        return f"{os.path.basename(newest[-1])} (in {self._dir})" if newest else "no checkpoint"

    def _save_error(self, prefix: str, err) -> CheckpointSaveError:
        reason = first_line(err)
        full = is_disk_full(err)
        newest = self._newest_text()
        resumable = f"{newest} is complete and named in the state file, so training can resume from it" \
            if newest != "no checkpoint" else \
            "No checkpoint is complete yet, so training would start from its beginning"
        if full:
            needed = self._bytes_needed(prefix)
            free = shutil.disk_usage(self._dir).free
            return DiskFullError(
                f"Not enough space to save {os.path.basename(prefix)} in {self._dir}: about {needed} bytes needed, "
                f"{free} bytes free ({reason}). {resumable}. Free space there "
                f"(keep_checkpoint_max=N needs room for N+1 checkpoints) or use another model_dir")
        return CheckpointSaveError(f"Could not save {prefix}: {reason}. {resumable}")

    def _bytes_needed(self, prefix: str) -> int:
        """The size of the newest checkpoint's files (the one that failed, when its data was written and
        the state file was not), or else the variables' bytes (without the input position's)."""
        for path in [prefix] + [p for p, _ in reversed(self._kept)]:
            if not has_files(path):
                continue
            try:
                return sum(os.path.getsize(name) for name in [path + ".index"] + data_files(path))
            except OSError:
                continue
        total = 0
        for variable in tf.compat.v1.global_variables():
            shape = variable.shape
            if shape.is_fully_defined():
                total += shape.num_elements() * variable.dtype.base_dtype.size
        return total

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
        tf.compat.v1.train.Saver does, so TensorFlow resolves them from any working directory."""
        write_state_file(self._dir, [os.path.relpath(p, self._dir) for p, _ in self._kept],
                         [t for _, t in self._kept], self._next_keep_time - (self._keep_secs or 0.0))


def finite_check(variables) -> Optional[tuple]:
    """(a bool vector: each floating variable is all-finite, their names, whether each is trainable)
    for CheckpointWriter, built in the training graph before it is finalised; None when there is no
    floating variable. Pass every global variable: moving statistics (batch norm), EMAs and
    optimizer slots are not trainable, and a NaN there leaves the training loss finite."""
    floating = [v for v in variables if v.dtype.base_dtype.is_floating]
    if not floating:
        return None
    trainable = {id(v) for v in tf.compat.v1.trainable_variables()}
    with tf.name_scope("npurun_finite_check"):
        flags = tf.stack([tf.reduce_all(tf.math.is_finite(v.read_value() if hasattr(v, "read_value") else v))
                          for v in floating])
    return flags, [v.op.name for v in floating], np.array([id(v) in trainable for v in floating])
