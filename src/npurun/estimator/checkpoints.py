"""Checkpoint files: saving with retention, and restoring the newest complete, readable checkpoint.

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

import contextlib
import errno
import glob
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

logger = logging.getLogger("npurun")

PREFIX = "model.ckpt"
STATE_FILE = "checkpoint"
FINISHED_FILE = "npurun_train_finished"
clock: Callable[[], float] = time.time

_STEP = re.compile(r"-(\d+)$")


class CheckpointSaveError(RuntimeError):
    """A checkpoint could not be saved; the newest complete one stays named in the state file."""


class DiskFullError(CheckpointSaveError):
    """No room on the model_dir's file system for the next checkpoint."""


class NonFiniteVariableError(CheckpointSaveError):
    """A variable holds NaN or Inf: the checkpoint is not written, the last good one stays newest."""


def checkpoint_step(prefix: str) -> Optional[int]:
    """The global step in a checkpoint name such as `model.ckpt-1200`, or None."""
    match = _STEP.search(prefix)
    return int(match.group(1)) if match else None


def _data_files(prefix: str) -> List[str]:
    return glob.glob(glob.escape(prefix) + ".data-*-of-*")


def _has_files(prefix: str) -> bool:
    return os.path.exists(prefix + ".index") and bool(_data_files(prefix))


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:  # vanished since it was listed
        return -1.0


def _state(model_dir: str):
    """The state file's CheckpointState, or None (missing, or unreadable: it is only a hint here)."""
    try:
        return tf.compat.v1.train.get_checkpoint_state(model_dir)
    except (tf.errors.OpError, ValueError, OSError) as err:
        logger.warning("Ignoring the unreadable checkpoint state file in %s (%s)", model_dir, _first_line(err))
        return None


_NOISE = ("Graph execution error", "Detected at node", "Node:", "[[", "Original stack trace", "File ")


def _first_line(err) -> str:
    """The line of an error that says what went wrong (TensorFlow's graph errors start with where)."""
    text = getattr(err, "message", None) or str(err)
    for line in text.splitlines():
        if line.strip() and not line[:1].isspace() and not line.startswith(_NOISE):
            return line.strip()
    return type(err).__name__


def candidates(model_dir: str) -> List[str]:
    """Checkpoint prefixes in `model_dir` that have an index and data, newest (highest step) first.

    Found both through the state file and by listing the directory, so a checkpoint written just
    before a kill (state file not yet updated) is found too.
    """
    found = {p[:-len(".index")] for p in glob.glob(os.path.join(glob.escape(model_dir), "*.index"))}
    state = _state(model_dir)
    if state is not None:
        found.update(state.all_model_checkpoint_paths)
        if state.model_checkpoint_path:
            found.add(state.model_checkpoint_path)
    # get_checkpoint_state already joined the state file's relative paths to model_dir.
    prefixes = [p for p in {os.path.normpath(p) for p in found} if _has_files(p)]
    return sorted(prefixes, key=lambda p: (checkpoint_step(p) or -1, _mtime(p + ".index")), reverse=True)


RELISTS = 5  # directory listings a reader tries when every checkpoint it listed was evicted meanwhile
SAVE_IN_PROGRESS_SECS = 30.0  # a data file without its index this recent may be a save still running


def incomplete(model_dir: str) -> List[Tuple[str, str]]:
    """(prefix, what is missing) of checkpoints with a data file but no index, an index but no data
    file, or named in the state file without their files; newest first. A data file written in the
    last SAVE_IN_PROGRESS_SECS without its index is left out (a save may be finishing)."""
    pattern = os.path.join(glob.escape(model_dir), f"{PREFIX}-*")
    prefixes = {re.sub(r"\.(index|data-\d+-of-\d+)$", "", name) for name in glob.glob(pattern)
                if name.endswith(".index") or re.search(r"\.data-\d+-of-\d+$", name)}
    state = _state(model_dir)
    named = set()
    if state is not None:
        named = {os.path.normpath(p) for p in list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]
                 if p}
    found = []
    for prefix in prefixes | named:
        index, data = os.path.exists(prefix + ".index"), bool(_data_files(prefix))
        if index and data:
            continue
        if data and clock() - max(_mtime(name) for name in _data_files(prefix)) < SAVE_IN_PROGRESS_SECS:
            continue
        missing = "its .index file is missing" if data else "its .data file is missing" if index else \
            "named in the state file, but its files are missing"
        found.append((prefix, missing))
    if any(not os.path.exists(prefix + ".index") and not _data_files(prefix) for prefix, _ in found):
        # Eviction drops a checkpoint from the state file before deleting its files: one that is
        # still named after its files were seen missing is really missing.
        state = _state(model_dir)
        still = {os.path.normpath(p) for p in state.all_model_checkpoint_paths} if state is not None else set()
        found = [(p, m) for p, m in found if os.path.exists(p + ".index") or _data_files(p) or p in still]
    return sorted(found, key=lambda item: checkpoint_step(item[0]) or -1, reverse=True)


def _warn_incomplete(model_dir: str, chosen: Optional[str]) -> None:
    """Warn about incomplete checkpoints newer than the one chosen (older ones may be mid-eviction)."""
    floor = checkpoint_step(chosen) if chosen else -1
    for prefix, missing in incomplete(model_dir):
        if (checkpoint_step(prefix) or -1) > (floor if floor is not None else -1):
            logger.warning("Skipping the incomplete checkpoint %s (%s)", prefix, missing)


PIN_PREFIX = ".npurun-read-"
STALE_PIN_SECS = 600.0  # pins live for one read or restore; older ones are a killed reader's


@contextlib.contextmanager
def pinned(prefix: str):
    """Hard links to the checkpoint's files in a private directory beside it, for one read.

    A training job may evict the checkpoint meanwhile: the links keep its data (an inode lives
    while a name points to it), so a reader never loses a checkpoint it chose halfway through.
    Yields the linked prefix, or `prefix` itself where links cannot be made (a read-only
    model_dir, a file system without hard links). Raises FileNotFoundError when the checkpoint
    vanished before it could be linked.
    """
    try:
        private = tempfile.mkdtemp(prefix=PIN_PREFIX, dir=os.path.dirname(prefix) or ".")
    except OSError:
        yield prefix
        return
    try:
        linked = os.path.join(private, os.path.basename(prefix))
        usable = True
        for name in [prefix + ".index"] + _data_files(prefix):
            try:
                os.link(name, os.path.join(private, os.path.basename(name)))
            except FileNotFoundError:
                raise
            except OSError:
                usable = False
                break
        if not _data_files(linked) and usable:
            raise FileNotFoundError(f"{prefix}: its data file vanished")
        yield linked if usable else prefix
    finally:
        shutil.rmtree(private, ignore_errors=True)


def remove_stale_pins(model_dir: str) -> None:
    """Remove pin directories left by killed readers (they would keep evicted data on disk)."""
    for path in glob.glob(os.path.join(glob.escape(model_dir), PIN_PREFIX + "*")):
        if clock() - _mtime(path) > STALE_PIN_SECS:
            shutil.rmtree(path, ignore_errors=True)


# Verified checkpoints: prefix -> the (size, mtime) of its files when they read completely.
_verified: Dict[str, tuple] = {}
_verified_lock = threading.Lock()


def _signature(prefix: str) -> tuple:
    """Identifies the files' contents: inode (a new save is a new file), size and time, by file."""
    files = sorted([prefix + ".index"] + _data_files(prefix))
    return tuple((os.path.basename(name), os.stat(name).st_ino, os.stat(name).st_size, os.stat(name).st_mtime_ns)
                 for name in files)


def check_readable(prefix: str) -> None:
    """Raise (OpError, ValueError, OSError or IndexError) unless every tensor of the checkpoint reads.

    Reads the data (TensorFlow checks each tensor's checksum), the input position (a variant,
    which numpy cannot hold: read by a small cached session) included; remembers the files' sizes
    and times, so an unchanged checkpoint is read once per process.
    """
    if not _has_files(prefix):
        raise FileNotFoundError(f"{prefix}.index or its data file is missing")
    with pinned(prefix) as linked:
        signature = _signature(linked)
        with _verified_lock:
            if _verified.get(prefix) == signature:
                return
        reader = tf.train.load_checkpoint(linked)
        variants = []
        for name, dtype in sorted(reader.get_variable_to_dtype_map().items()):
            if dtype == tf.variant:
                variants.append(name)
            else:
                reader.get_tensor(name)
        if variants:
            _read_variants(linked, variants)
    with _verified_lock:
        _verified[prefix] = signature


_variant_readers: Dict[int, tuple] = {}


def _read_variants(prefix: str, names: List[str]) -> None:
    """Restore variant tensors (discarding them) in a session kept per number of names."""
    with _verified_lock:
        if len(names) not in _variant_readers:
            with tf.Graph().as_default() as graph, tf.device("/device:CPU:0"):
                path = tf.compat.v1.placeholder(tf.string, [])
                keys = tf.compat.v1.placeholder(tf.string, [len(names)])
                read = tf.raw_ops.RestoreV2(prefix=path, tensor_names=keys, shape_and_slices=[""] * len(names),
                                            dtypes=[tf.variant] * len(names))
            session = tf.compat.v1.Session(graph=graph, config=tf.compat.v1.ConfigProto(
                inter_op_parallelism_threads=1, intra_op_parallelism_threads=1))
            _variant_readers[len(names)] = (session, path, keys, read[0].op)
        session, path, keys, op = _variant_readers[len(names)]
    session.run(op, feed_dict={path: prefix, keys: names})  # an op, not its outputs: variants stay in TF


def why_unreadable(prefix: str) -> Optional[str]:
    """None when the checkpoint reads completely (see check_readable); otherwise the reason."""
    try:
        check_readable(prefix)
    except (tf.errors.OpError, ValueError, OSError, IndexError) as err:  # IndexError: a truncated file
        return _first_line(err)
    return None


def is_readable(prefix: str) -> bool:
    """Whether every tensor of the checkpoint reads (see check_readable)."""
    return why_unreadable(prefix) is None


def latest_checkpoint(model_dir: str) -> Optional[str]:
    """The newest readable checkpoint in `model_dir`, or None; a warning names each one skipped."""
    if not model_dir or not os.path.isdir(model_dir):
        return None
    chosen, vanished = None, False
    for _ in range(RELISTS):
        vanished = False
        for prefix in candidates(model_dir):
            reason = why_unreadable(prefix)
            if reason is None:
                chosen = prefix
                break
            if _has_files(prefix):  # not merely evicted by a concurrent training job
                logger.warning("Skipping the damaged checkpoint %s (%s); using an older one", prefix, reason)
            else:
                vanished = True
        if chosen is not None or not vanished:
            break  # else every candidate was evicted while we read: list the directory again
    _warn_incomplete(model_dir, chosen)
    return chosen


def read_newest(model_dir: str, read: Callable[[str], object]):
    """`read(prefix)` of the newest readable checkpoint; when that checkpoint vanishes before it is
    read (a training job evicted it), of the next newest. Raises ValueError when there is none."""
    for _ in range(10):
        prefix = latest_checkpoint(model_dir)
        if prefix is None:
            break
        try:
            with pinned(prefix) as linked:
                return read(linked)
        except (tf.errors.NotFoundError, OSError):
            if _has_files(prefix):
                raise
    raise ValueError(f"No checkpoint in {model_dir}: train the model first")


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
        with open(path + ".tmp", "w") as marker:
            marker.write(f"{step}\n")
        os.replace(path + ".tmp", path)
    except OSError as err:
        _remove(path + ".tmp")
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
                           "from its start", prefix, _first_line(err))
    savers[-1].restore(sess, prefix)


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
    silently move the global step back).
    """
    tried = []
    finished = finished_step(model_dir)
    chosen = None
    for _ in range(RELISTS):
        vanished = False
        for prefix in candidates(model_dir):
            if prefix in tried:
                continue
            use = savers if resume_input and checkpoint_step(prefix) != finished else savers[-1:]
            try:
                with pinned(prefix) as linked:
                    restore(use, sess, linked)
            except (tf.errors.OpError, ValueError, IndexError, OSError) as err:
                if not _has_files(prefix):
                    vanished = True
                    continue  # evicted while we read it (readers run beside training)
                logger.warning("Checkpoint %s does not restore (%s); trying an older one", prefix, _first_line(err))
                tried.append(prefix)
                continue
            chosen = prefix
            break
        if chosen is not None or not vanished:
            break
    _warn_incomplete(model_dir, chosen)
    if chosen is not None:
        return chosen
    if tried:
        raise RuntimeError(f"None of the checkpoints in {model_dir} restores ({', '.join(tried)}; the warnings above "
                           f"give each reason). They are left in place: if the read errors were transient (a network "
                           f"file system), try again; to start from scratch, use another model_dir")
    return None


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def state_file_text(paths: Sequence[str], timestamps: Sequence[float], last_preserved: float) -> str:
    """The `checkpoint` state file (a CheckpointState text proto) naming `paths`, newest last."""
    def quoted(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = [f"model_checkpoint_path: {quoted(paths[-1])}"]
    lines += [f"all_model_checkpoint_paths: {quoted(p)}" for p in paths]
    lines += [f"all_model_checkpoint_timestamps: {float(t)!r}" for t in timestamps]
    lines.append(f"last_preserved_timestamp: {float(last_preserved)!r}")
    return "\n".join(lines) + "\n"


def write_state_file(model_dir: str, paths: Sequence[str], timestamps: Sequence[float],
                     last_preserved: float) -> None:
    """Replace the state file atomically (write a temporary file, rename it over the old one). Not
    fsynced: TensorFlow does not fsync the checkpoint data either, so this protects against a
    killed process, not a power cut."""
    path = os.path.join(model_dir, STATE_FILE)
    temporary = f"{path}.tmp{os.getpid()}"
    try:
        with open(temporary, "w") as state:
            state.write(state_file_text(paths, timestamps, last_preserved))
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise


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
        self.last_saved_step: Optional[int] = None
        self.last_saved: Optional[str] = None
        os.makedirs(model_dir, exist_ok=True)
        for leftover in glob.glob(os.path.join(glob.escape(model_dir), "*.tempstate*")):
            _remove(leftover)  # a save killed half-way; never part of a checkpoint
        remove_stale_pins(model_dir)
        self._kept, last_preserved = self._recover()
        self._next_keep_time = (last_preserved or clock()) + (self._keep_secs or 0.0)

    def _recover(self) -> Tuple[List[Tuple[str, float]], Optional[float]]:
        """The checkpoints still subject to retention, oldest first, with their save times."""
        state = _state(self._dir)
        managed: List[Tuple[str, float]] = []
        last_preserved = None
        if state is not None:
            times = list(state.all_model_checkpoint_timestamps)
            for i, path in enumerate(state.all_model_checkpoint_paths):
                path = os.path.normpath(path)  # already joined to the directory
                if _has_files(path):
                    managed.append((path, times[i] if i < len(times) else _mtime(path + ".index")))
            last_preserved = state.last_preserved_timestamp or None
        newest = max((checkpoint_step(p) or -1 for p, _ in managed), default=-1)
        # Checkpoints written after the last state update (a kill in between) join the window.
        for path in reversed(candidates(self._dir)):
            if (checkpoint_step(path) or -1) > newest:
                managed.append((path, _mtime(path + ".index")))
        return managed, last_preserved

    @property
    def saves_input_position(self) -> bool:
        return len(self._savers) > 1

    def begin(self, sess=None) -> None:
        """Before training: decide once whether checkpoints can hold the input position."""
        if sess is not None and self._input_state is not None and len(self._savers) > 1:
            try:
                sess.run(self._input_state.op)
            except tf.errors.OpError as err:
                logger.warning("Checkpoints will not hold the input pipeline's position (it cannot be saved: %s); "
                               "a restart re-reads the input from its start", _first_line(err))
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
                _remove(leftover)
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
            for name in glob.glob(glob.escape(path) + ".*"):
                _remove(name)
        self.last_saved_step = step
        self.last_saved = prefix
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(sess, step)) or stop
        return stop

    def _check_finite(self, sess, step: int) -> None:
        flags, names = self._finite_check
        values = sess.run(flags)
        if not values.all():
            first = names[int(values.argmin())]
            raise NonFiniteVariableError(
                f"The variable {first} holds NaN or Inf at global step {step}; the checkpoint is not written, "
                f"so {self._newest_text()} stays the newest. Lower the learning rate, clip the gradients, or "
                f"enable loss scaling (precision options)")

    def _newest_text(self) -> str:
        newest = [p for p, _ in self._kept if _has_files(p)]
        return f"{os.path.basename(newest[-1])} (in {self._dir})" if newest else "no checkpoint"

    def _save_error(self, prefix: str, err) -> CheckpointSaveError:
        reason = _first_line(err)
        full = isinstance(err, tf.errors.ResourceExhaustedError) or getattr(err, "errno", None) == errno.ENOSPC \
            or "No space left" in str(err) or "Disk quota" in str(err)
        newest = self._newest_text()
        if full:
            needed = self._bytes_needed()
            free = shutil.disk_usage(self._dir).free
            return DiskFullError(
                f"Not enough space to save {os.path.basename(prefix)} in {self._dir}: about {needed} bytes needed, "
                f"{free} bytes free ({reason}). {newest} is complete and named in the state file, so training can "
                f"resume from it. Free space there (keep_checkpoint_max=N needs room for N+1 checkpoints) "
                f"or use another model_dir")
        return CheckpointSaveError(f"Could not save {prefix}: {reason}. {newest} is complete and named in the state "
                                   f"file")

    def _bytes_needed(self) -> int:
        """The size of the newest checkpoint's files, or else the variables' bytes."""
        for path, _ in reversed(self._kept):
            try:
                return sum(os.path.getsize(name) for name in [path + ".index"] + _data_files(path))
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
    """(a bool vector: each floating variable is all-finite, their names) for CheckpointWriter, built
    in the training graph before it is finalised; None when there is no floating variable."""
    floating = [v for v in variables if v.dtype.base_dtype.is_floating]
    if not floating:
        return None
    with tf.name_scope("npurun_finite_check"):
        flags = tf.stack([tf.reduce_all(tf.math.is_finite(v.read_value() if hasattr(v, "read_value") else v))
                          for v in floating])
    return flags, [v.op.name for v in floating]
