"""Exception dump (`enable_exception_dump`): what a failing op saw, written where the script runs.

Use: wrap the session runs of train / evaluate / predict (one run, or a whole loop of them):

    with exception_dump(options, session, feed_dict, mode="train"):
        session.run(fetches, feed_dict)

Hooks cannot see a failing run, so this is a context manager for whoever runs the session.

Rules:
- Off (`enable_exception_dump` 0, the default): the block runs unguarded, nothing else happens.
- On (1 or 2; the NPU's 2 is its "lite" variant, whose extras — workspace, tiling — do not exist on
  a CPU/GPU, so both behave alike): when the block raises `tf.errors.OpError`, a directory
  `./exception_dump/<mode>-<timestamp>/` (current directory at the time of the error) gets
  `error.json` (op name, type, device, error class, code, message, node_def, one entry per input)
  and, in the `dump_files` format (so `npurun dump show` reads it), each input that can be
  recomputed, as `.npy` with statistics. Then the error is raised again, same class, with
  "[npurun] exception dump: <dir>" appended to its message (the original is its `__cause__`).
- Inputs are recomputed by running the failing op's input tensors in the same session with the
  same feeds, after the failure (variables hold their values as of then). An input is skipped,
  with the reason in `error.json`, when its computation contains a stateful op other than variable
  reads (an input pipeline or a random op would produce a different value and consume data), needs
  an unfed placeholder, or cannot be fetched. The failing op's outputs cannot exist; none are written.
- Not dumped: OutOfRangeError (the normal end of input), AbortedError / UnavailableError (the
  session recovers and retries them), CancelledError, and errors that name no op of the graph
  (then only error.json with the node name from the message).
- `session` may be a `tf.compat.v1.Session`, a `MonitoredSession` (its raw session is used, so
  no hook sees the recomputation) or a zero-argument callable returning either.
"""
from __future__ import annotations

import contextlib
import json
import re
import logging
import os
import traceback

import tensorflow as tf

from .. import safe_files
from .dump_files import DumpWriter, new_run_dir
from .graph_scan import fed_tensors, is_fetchable

log = logging.getLogger(__name__)

DIRECTORY = "exception_dump"
_NOT_DUMPED = (tf.errors.OutOfRangeError, tf.errors.AbortedError, tf.errors.UnavailableError,
               tf.errors.CancelledError)
# Stateful ops that read state without changing it: recomputing through them is faithful.
_READS = frozenset({"VarHandleOp", "ReadVariableOp", "VariableV2", "Variable", "VarIsInitializedOp",
                    "Placeholder", "PlaceholderWithDefault", "Const"})


def _level(options) -> int:
    return int(options.get("enable_exception_dump", 0) or 0) if options is not None else 0


def _raw_session(session):
    if callable(session) and not hasattr(session, "run"):
        session = session()
    # MonitoredSession and SingularMonitoredSession both expose their tf.Session this way;
    # running through the monitored session would call every hook again.
    unwrap = getattr(session, "_tf_sess", None)
    return unwrap() if callable(unwrap) else session


def _why_not_recomputable(graph, tensor, fed: set) -> str | None:
    """None when `tensor` can be recomputed faithfully, else the reason (see the module rules)."""
    if tensor.name in fed:
        return None
    if not is_fetchable(graph, tensor):
        return "cannot be fetched (inside control flow, or a resource/variant handle)"
    pending, seen = [tensor.op], set()
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in ("Placeholder",) and not any(out.name in fed for out in op.outputs):
            return f"needs a value for placeholder {op.name!r}, which was not fed"
        if op._is_stateful and op.type not in _READS:  # pylint: disable=protected-access
            return f"depends on stateful op {op.name!r} ({op.type}); recomputing would not give the same value"
        pending.extend(t.op for t in op.inputs if t.name not in fed)
        pending.extend(op.control_inputs)
    return None


def write_exception_dump(error: tf.errors.OpError, session, feed_dict=None, mode: str = "run",
                         root: str | None = None) -> str:
    """Write the dump for `error` (see the module rules) and return its directory."""
    folder = safe_files.make_dir(os.path.join(root or os.getcwd(), DIRECTORY), "exception dump folder")
    path = new_run_dir(folder, mode)
    op = error.op or _op_named_in_message(error, session)
    node = error.node_def
    info = {"mode": mode, "error": type(error).__name__, "code": error.error_code, "message": error.message,
            "op": op.name if op is not None else getattr(node, "name", None),
            "type": op.type if op is not None else getattr(node, "op", None),
            "device": op.device if op is not None else getattr(node, "device", None),
            "node_def": str(node) if node is not None else None, "inputs": []}
    if op is not None:
        writer = DumpWriter(root=path, prefix=mode, path=path)
        try:
            info["inputs"] = _dump_inputs(op, _raw_session(session), feed_dict, writer)
        finally:
            writer.close()
    with safe_files.replacing(os.path.join(path, "error.json"), "w", "exception dump file") as out:
        json.dump(info, out, indent=2, sort_keys=True)
    return path


def _op_named_in_message(error: tf.errors.OpError, session):
    """The failing op when the error carries none (runs through a cached callable): its name is in
    the message as `{{node NAME}}`."""
    match = re.search(r"\{\{node ([^}]+)\}\}", error.message or "")
    graph = getattr(_raw_session(session), "graph", None)
    if match is None or graph is None:
        return None
    try:
        return graph.get_operation_by_name(match.group(1))
    except KeyError:
        return None


def _dump_inputs(op, session, feed_dict, writer: DumpWriter) -> list:
    graph = op.graph
    fed = fed_tensors(graph, feed_dict)
    entries = []
    for slot, tensor in enumerate(op.inputs):
        entry = {"slot": slot, "tensor": tensor.name, "dtype": tensor.dtype.name,
                 "static_shape": tensor.shape.as_list() if tensor.shape.rank is not None else None,
                 "file": None, "reason": _why_not_recomputable(graph, tensor, fed)}
        if entry["reason"] is None:
            try:
                value = session.run(tensor, feed_dict=feed_dict)
            except Exception as error:  # noqa: BLE001 - whatever failed, the dump must still be written
                entry["reason"] = f"recomputing failed: {type(error).__name__}: {str(error).splitlines()[0]}"
            else:
                record = writer.write(kind="exception", step=None, op=op.name, op_type=op.type, io="input",
                                      slot=slot, tensor=tensor.name, value=value)
                entry.update(file=record["file"], shape=record["shape"])
        entries.append(entry)
    return entries


def _with_path(error: tf.errors.OpError, path: str) -> tf.errors.OpError:
    message = f"{error.message}\n[npurun] exception dump: {path}"
    try:
        return type(error)(error.node_def, error.op, message)
    except TypeError:  # a subclass with another constructor: keep the class family and the code
        return tf.errors.OpError(error.node_def, error.op, message, error.error_code)


@contextlib.contextmanager
def exception_dump(options, session, feed_dict=None, mode: str = "run"):
    """Guard one or more session runs (see the module rules). `options`: NPURunConfig(...).options."""
    if not _level(options):
        yield
        return
    try:
        yield
    except _NOT_DUMPED:
        raise
    except tf.errors.OpError as error:
        try:
            path = write_exception_dump(error, session, feed_dict, mode)
        except Exception:  # noqa: BLE001 - a broken dump must not hide the user's error
            log.error("enable_exception_dump: writing the dump failed:\n%s", traceback.format_exc())
            raise error from None
        log.error("an op failed (%s); exception dump written to %s", type(error).__name__, path)
        raise _with_path(error, path) from error


def run_with_exception_dump(options, session, fetches, feed_dict=None, mode: str = "run", **kwargs):
    """`session.run(fetches, feed_dict, **kwargs)` guarded by `exception_dump`."""
    with exception_dump(options, session, feed_dict, mode):
        return session.run(fetches, feed_dict=feed_dict, **kwargs)
