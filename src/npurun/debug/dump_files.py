"""The on-disk dump format, shared by tensor dumps, overflow dumps and exception dumps.

Layout (rules):
- One *dump directory* per session (or per exception): `<root>/<mode>-<YYYYmmddTHHMMSS.ffffff>`,
  created on the first write, so a session that dumps nothing leaves nothing behind.
- `index.jsonl` in it: one JSON object per tensor, appended and flushed as each tensor is
  written (a crash keeps what was dumped). Keys: `kind` ("tensor", "overflow", "exception"),
  `step`, `op`, `type`, `io` ("input" or "output"), `slot`, `tensor` (the TensorFlow tensor name
  holding the value; for an input slot, the producer's output), `shape`, `dtype`, `file` (path
  relative to the dump directory, or null when only statistics were written), `stats` (see
  `stats.tensor_stats`, or null), `order` (execution rank within the step, or null), plus
  optional extras (`last_step` when one host call ran several steps, `first` for overflows).
- Tensors are `.npy` files under `step_<step>/` (or `<kind>/` when there is no step), with the
  op name's `/` scopes as directories: `step_5/dense/MatMul.output.0.npy`. dtypes NumPy cannot
  store (bfloat16, float8) are widened to float32; `dtype` keeps the original name.
- Nothing is written through a symbolic link (`npurun.safe_files`): a link planted under the
  index's, a folder's or a tensor file's name is refused with an error naming it.

Standard library and NumPy only (the CLI reads dumps without importing TensorFlow).
"""
from __future__ import annotations

import datetime
import json
import os
import re
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .. import safe_files
from .stats import plain_array, tensor_stats

INDEX_NAME = "index.jsonl"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-/]")


def _timestamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%dT%H%M%S.%f")


def new_run_dir(root: str, prefix: str) -> str:
    """Create and return `<root>/<prefix>-<timestamp>`, never reusing an existing directory."""
    os.makedirs(root, exist_ok=True)
    base = os.path.join(root, f"{prefix}-{_timestamp()}")
    path, n = base, 0
    while True:
        try:
            os.mkdir(path)
            return path
        except FileExistsError:  # two sessions in the same microsecond
            n += 1
            path = f"{base}-{n}"


def tensor_file(step: int | None, kind: str, op: str, io: str, slot: int) -> str:
    """Relative path of one tensor's `.npy` file (see the layout rules)."""
    folder = f"step_{step}" if step is not None else kind
    if kind == "overflow" and step is not None:
        folder += "/overflow"  # an op may be both dumped and reported as overflowing in one step
    # Op names may hold '>' (and users' odd characters): keep the scopes, neutralise the rest,
    # and never let a name climb out of the directory.
    name = "/".join(part for part in _UNSAFE.sub("_", op).split("/") if part not in ("", ".", ".."))
    return f"{folder}/{name}.{io}.{slot}.npy"


class DumpWriter:
    """Appends tensors and their index records to one dump directory, created lazily."""

    def __init__(self, root: str, prefix: str, path: str | None = None):
        self._root, self._prefix = root, prefix
        self.path = path  # None until the first write
        self._index = None

    def _open(self) -> None:
        if self.path is None:
            self.path = new_run_dir(self._root, self._prefix)
        if self._index is None:
            self._index = safe_files.open_append(os.path.join(self.path, INDEX_NAME), "dump index")

    def write(self, *, kind: str, step: int | None, op: str, op_type: str, io: str, slot: int,
              tensor: str, value, data: str = "tensor", order: int | None = None, **extra) -> dict:
        """Write one tensor (`data="tensor"`: .npy + stats; `"stats"`: stats only); return its record."""
        self._open()
        original = np.asarray(value)
        array = plain_array(original)
        record = {"kind": kind, "step": step, "op": op, "type": op_type, "io": io, "slot": slot,
                  "tensor": tensor, "shape": list(array.shape), "dtype": original.dtype.name,
                  "file": None, "stats": tensor_stats(array), "order": order, **extra}
        if data == "tensor" and array.dtype.kind != "O":  # an object array np.save cannot store: stats only
            relative = tensor_file(step, kind, op, io, slot)
            target = os.path.join(self.path, relative)
            safe_files.make_dirs_under(self.path, os.path.dirname(relative), "dump folder")
            with safe_files.replacing(target, "wb", "dump file") as handle:
                np.save(handle, array, allow_pickle=False)
            record["file"] = relative
        self._index.write(json.dumps(record, sort_keys=True) + "\n")
        self._index.flush()
        return record

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


# --------------------------------------------------------------------------- reading

class DumpError(ValueError):
    """A dump directory that cannot be read as one: a damaged index, a record whose `file` points
    outside the directory, a tensor file that is not a .npy. The message names the file and line."""


@dataclass(frozen=True)
class Dump:
    """One dump directory and its index records, in the order they were written."""
    path: str
    records: tuple

    def load(self, record: dict) -> np.ndarray:
        """The tensor of `record` (raises ValueError when only statistics were dumped, DumpError when its
        file is not a .npy inside this dump directory)."""
        if not record.get("file"):
            raise ValueError(f"{record['op']} {record['io']}:{record['slot']} was dumped as statistics only")
        path = tensor_path(self.path, record["file"])
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as error:
            raise DumpError(f"{path}: not a readable .npy tensor file ({' '.join(str(error).split())})") from None


def tensor_path(dump_dir: str, relative: str, where: str | None = None) -> str:
    """`relative` (an index record's `file`) inside `dump_dir`, or DumpError: an index names files
    relative to its own directory (see the layout rules), so an absolute path, a `..` component or a
    symbolic link leading out of the directory is refused rather than read."""
    where = where or os.path.join(dump_dir, INDEX_NAME)
    if not isinstance(relative, str) or not relative or "\x00" in relative or os.path.isabs(relative) or \
            any(part == ".." for part in relative.replace("\\", "/").split("/")):
        raise DumpError(f"{where}: record file {_shown(relative)} is not a path inside the dump directory "
                        f"(index files are relative to it; absolute paths and '..' are refused)")
    root = os.path.realpath(dump_dir)
    target = os.path.realpath(os.path.join(root, relative))
    if not target.startswith(root + os.sep):
        raise DumpError(f"{where}: record file {_shown(relative)} leads outside the dump directory "
                        f"(through a symbolic link); refused")
    return target


def _shown(value) -> str:
    from ..config.errors import bounded_repr

    return bounded_repr(value, limit=100)


def is_dump_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, INDEX_NAME))


def dump_dirs(path: str) -> list[str]:
    """Dump directories at `path`: itself if it holds an index, else its children that do (sorted)."""
    if is_dump_dir(path):
        return [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such directory")
    return sorted(os.path.join(path, name) for name in os.listdir(path)
                  if is_dump_dir(os.path.join(path, name)))


# Index record fields the readers use: name -> (accepted types, may be null). Others are kept as given.
_INT = (int,)
_NUMBER = (int, float)
_RECORD_FIELDS = {"op": ((str,), False), "io": ((str,), False), "slot": (_INT, False), "kind": ((str,), True),
                  "step": (_INT, True), "type": ((str,), True), "tensor": ((str,), True), "shape": ((list,), True),
                  "dtype": ((str,), True), "file": ((str,), True), "stats": ((dict,), True),
                  "order": (_INT, True), "last_step": (_INT, True)}


def check_record(record, where: str) -> dict:
    """`record` when it is an index record the readers can use (see the layout rules), else DumpError."""
    if not isinstance(record, dict):
        raise DumpError(f"{where}: expected a JSON object (an index record), got a JSON {_json_type(record)}")
    for name, (types, nullable) in _RECORD_FIELDS.items():
        if name not in record:
            if nullable:
                continue
            raise DumpError(f"{where}: the record has no {name!r}")
        value = record[name]
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise DumpError(f"{where}: record field {name!r} is {_shown(value)}; expected "
                            f"{' or '.join(t.__name__ for t in types)}{' or null' if nullable else ''}")
    shape, stats = record.get("shape"), record.get("stats")
    if shape is not None and not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise DumpError(f"{where}: record field 'shape' is {_shown(shape)}; expected a list of ints")
    if stats is not None and not all(v is None or (isinstance(v, _NUMBER) and not isinstance(v, bool))
                                     for v in stats.values()):
        raise DumpError(f"{where}: record field 'stats' holds a value that is not a number")
    return record


def _json_type(value) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def read_records(path: str) -> Iterator[dict]:
    index_path = os.path.join(path, INDEX_NAME)
    try:
        with open(index_path, encoding="utf-8") as index:
            for number, line in enumerate(index, 1):
                if line.strip():
                    where = f"{index_path} line {number}"
                    try:
                        record = json.loads(line)
                    except RecursionError:
                        raise DumpError(f"{where}: nested too deeply to be an index record") from None
                    except json.JSONDecodeError as error:
                        raise DumpError(f"{where}: not JSON ({error})") from None
                    record = check_record(record, where)
                    if record.get("file") is not None:
                        tensor_path(path, record["file"], where)  # refused here already: ls and show list it
                    yield record
    except UnicodeDecodeError as error:
        raise DumpError(f"{index_path}: not UTF-8 text (byte {error.start}); not a dump index") from None


def _written_at(path: str) -> tuple:
    index = os.path.join(path, INDEX_NAME)
    return (os.path.getmtime(index) if os.path.exists(index) else os.path.getmtime(path), path)


def open_dump(path: str) -> Dump:
    """The dump at `path` (a dump directory, or a root holding exactly one, else the newest: the one
    whose index was written last). A damaged index is a DumpError naming its file and line."""
    found = dump_dirs(path)
    if not found:
        raise FileNotFoundError(f"{path}: no dump here (no {INDEX_NAME} in it or its subdirectories)")
    # The newest session is the most recently written one: names carry a mode prefix ("eval-",
    # "train-"), so sorting names would prefer a train dump to a later eval dump.
    chosen = max(found, key=_written_at)
    return Dump(chosen, tuple(read_records(chosen)))
