"""Checkpoint files as found on disk: names, listing, readability, pins, the state file.

Everything here tolerates files that vanish while it looks at them (a training job evicting old
checkpoints while a reader lists them). Policy (which checkpoint to restore, retention, errors)
is in checkpoints.py.
"""
from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

from .. import safe_files

logger = logging.getLogger("npurun")

PREFIX = "model.ckpt"
STATE_FILE = "checkpoint"

_STEP = re.compile(r"-(\d+)$")


def checkpoint_step(prefix: str) -> Optional[int]:
    """The global step in a checkpoint name such as `model.ckpt-1200`, or None."""
    match = _STEP.search(prefix)
    return int(match.group(1)) if match else None


def data_files(prefix: str) -> List[str]:
    return glob.glob(glob.escape(prefix) + ".data-*-of-*")


def has_files(prefix: str) -> bool:
    return os.path.exists(prefix + ".index") and bool(data_files(prefix))


def mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:  # vanished since it was listed
        return -1.0


_warned_states = set()  # (path, size, mtime) of damaged state files already warned about


def read_state(model_dir: str):
    """The state file's CheckpointState (paths joined to model_dir, as TensorFlow's reader does), or
    None (missing, or damaged: it is only a hint here, the directory is listed too). Parsed here
    rather than by tf.compat.v1.train.get_checkpoint_state, which logs two lines of its own on
    every read of a damaged file; this warns once per damaged version of the file."""
    from google.protobuf import text_format
    from tensorflow.python.checkpoint.checkpoint_management import CheckpointState

    path = os.path.join(model_dir, STATE_FILE)
    try:
        with open(path, "rb") as handle:
            text = handle.read()
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        _warn_state_once(path, None, str(err))
        return None
    state = CheckpointState()
    try:
        text_format.Merge(text.decode("utf-8"), state)
        if not state.model_checkpoint_path:
            raise ValueError("it names no checkpoint")
    except (text_format.ParseError, UnicodeDecodeError, ValueError) as err:
        _warn_state_once(path, (stat.st_size, stat.st_mtime_ns), first_line(err))
        return None
    def joined(name):
        return name if os.path.isabs(name) else os.path.join(model_dir, name)
    state.model_checkpoint_path = joined(state.model_checkpoint_path)
    paths = [joined(p) for p in state.all_model_checkpoint_paths]
    del state.all_model_checkpoint_paths[:]
    state.all_model_checkpoint_paths.extend(paths)
    return state


def _warn_state_once(path, version, reason) -> None:
    key = (path, version)
    if version is None or key not in _warned_states:
        _warned_states.add(key)
        logger.warning("Ignoring the damaged checkpoint state file %s (%s); checkpoints are found by listing "
                       "the directory", path, reason)


_NOISE = ("Graph execution error", "Detected at node", "Node:", "[[", "Original stack trace", "File ")


_ORIGINAL = "Original error:"  # TensorFlow's Saver wraps a failed restore's error after this


def first_line(err) -> str:
    """The line of an error that says what went wrong (TensorFlow's graph errors start with where).

    A Saver's "Restoring from checkpoint failed. ... Original error:" gives its first sentence and the
    original error's line ("Key dense/kernel not found in checkpoint"), not the wrapper's line alone."""
    text = getattr(err, "message", None) or str(err)
    head, marker, rest = text.partition(_ORIGINAL)
    if marker:
        inner = _first_line(rest)
        if inner is not None:
            return f"{head.strip().split('. ')[0].rstrip('.')}: {inner}"
    line = _first_line(text)
    return line if line is not None else type(err).__name__


def _first_line(text):
    for line in text.splitlines():
        if line.strip() and not line[:1].isspace() and not line.startswith(_NOISE):
            return line.strip()
    return None


def candidates(model_dir: str) -> List[str]:
    """Checkpoint prefixes in `model_dir` that have an index and data, newest (highest step) first.

    Found both through the state file and by listing the directory, so a checkpoint written just
    before a kill (state file not yet updated) is found too.
    """
    found = {p[:-len(".index")] for p in glob.glob(os.path.join(glob.escape(model_dir), "*.index"))}
    state = read_state(model_dir)
    if state is not None:
        found.update(state.all_model_checkpoint_paths)
        if state.model_checkpoint_path:
            found.add(state.model_checkpoint_path)
    # get_checkpoint_state already joined the state file's relative paths to model_dir.
    prefixes = [p for p in {os.path.normpath(p) for p in found} if has_files(p)]
    return sorted(prefixes, key=lambda p: (checkpoint_step(p) or -1, mtime(p + ".index")), reverse=True)


RELIST_SECS = 10.0  # how long a reader keeps listing again while every checkpoint it listed was evicted meanwhile


def relists():
    """Attempts (0, 1, ...) of a reader that lists checkpoints again when all it listed vanished
    before it could pin one. Each vanishing means the training job wrote a newer checkpoint, so
    the attempts are bounded by time (RELIST_SECS), not by a count: a job saving every few
    milliseconds with keep_checkpoint_max=1 outran a handful of listings."""
    deadline = time.monotonic() + RELIST_SECS
    attempt = 0
    while attempt == 0 or time.monotonic() < deadline:
        yield attempt
        attempt += 1
SAVE_IN_PROGRESS_SECS = 30.0  # a data file without its index this recent may be a save still running


def incomplete(model_dir: str) -> List[Tuple[str, str]]:
    """(prefix, what is missing) of checkpoints with a data file but no index, an index but no data
    file, or named in the state file without their files; newest first. A data file written in the
    last SAVE_IN_PROGRESS_SECS without its index is left out (a save may be finishing)."""
    pattern = os.path.join(glob.escape(model_dir), f"{PREFIX}-*")
    prefixes = {re.sub(r"\.(index|data-\d+-of-\d+)$", "", name) for name in glob.glob(pattern)
                if name.endswith(".index") or re.search(r"\.data-\d+-of-\d+$", name)}
    state = read_state(model_dir)
    named = set()
    if state is not None:
        named = {os.path.normpath(p) for p in list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]
                 if p}
    found = []
    for prefix in prefixes | named:
        index, data = os.path.exists(prefix + ".index"), bool(data_files(prefix))
        if index and data:
            continue
        if data and time.time() - max(mtime(name) for name in data_files(prefix)) < SAVE_IN_PROGRESS_SECS:
            continue
        missing = "its .index file is missing" if data else "its .data file is missing" if index else \
            "named in the state file, but its files are missing"
        found.append((prefix, missing))
    if any(not os.path.exists(prefix + ".index") and not data_files(prefix) for prefix, _ in found):
        # Eviction drops a checkpoint from the state file before deleting its files: one that is
        # still named after its files were seen missing is really missing.
        state = read_state(model_dir)
        still = {os.path.normpath(p) for p in state.all_model_checkpoint_paths} if state is not None else set()
        found = [(p, m) for p, m in found if os.path.exists(p + ".index") or data_files(p) or p in still]
    return sorted(found, key=lambda item: checkpoint_step(item[0]) or -1, reverse=True)


def warn_incomplete(model_dir: str, chosen: Optional[str]) -> None:
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
        for name in [prefix + ".index"] + data_files(prefix):
            try:
                os.link(name, os.path.join(private, os.path.basename(name)))
            except FileNotFoundError:
                raise
            except OSError:
                usable = False
                break
        if not data_files(linked) and usable:
            raise FileNotFoundError(f"{prefix}: its data file vanished")
        yield linked if usable else prefix
    finally:
        shutil.rmtree(private, ignore_errors=True)


def remove_stale_pins(model_dir: str) -> None:
    """Remove pin directories left by killed readers (they would keep evicted data on disk)."""
    for path in glob.glob(os.path.join(glob.escape(model_dir), PIN_PREFIX + "*")):
        if time.time() - mtime(path) > STALE_PIN_SECS:
            shutil.rmtree(path, ignore_errors=True)


# Verified checkpoints: prefix -> the (size, mtime) of its files when they read completely.
_verified: Dict[str, tuple] = {}
_verified_lock = threading.Lock()


def _signature(prefix: str) -> tuple:
    """Identifies the files' contents: inode (a new save is a new file), size and time, by file."""
    files = sorted([prefix + ".index"] + data_files(prefix))
    return tuple((os.path.basename(name), os.stat(name).st_ino, os.stat(name).st_size, os.stat(name).st_mtime_ns)
                 for name in files)


def check_readable(prefix: str) -> None:
    """Raise (OpError, ValueError, OSError or IndexError) unless every tensor of the checkpoint reads.

    Reads the data (TensorFlow checks each tensor's checksum), the input position (a variant,
    which numpy cannot hold: read by a small cached session) included; remembers the files' sizes
    and times, so an unchanged checkpoint is read once per process.
    """
    if not has_files(prefix):
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
        return first_line(err)
    return None


def is_readable(prefix: str) -> bool:
    """Whether every tensor of the checkpoint reads (see check_readable)."""
    return why_unreadable(prefix) is None


def remove_quietly(path: str) -> None:
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
    """Replace the state file atomically (write a private temporary file, rename it over the old one). Not
    fsynced: TensorFlow does not fsync the checkpoint data either, so this protects against a
    killed process, not a power cut."""
    # A private temporary name (not a guessable one a link could be planted under); a link planted
    # as the state file itself is refused, naming it.
    safe_files.write_text(os.path.join(model_dir, STATE_FILE), state_file_text(paths, timestamps, last_preserved),
                          "checkpoint state file")


