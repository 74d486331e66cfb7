"""Dumps and overflow detection for TensorFlow 2 code (`global_options().dump_config`).

Why not npurun's session hooks: eager code, tf.function and Keras `fit` run no tf.compat.v1 session,
so there is no `before_run` to add fetches to. Here an op callback (TensorFlow's
`op_callbacks.add_op_callback`, the mechanism of tf.debugging's own dumps) sees every op as a
tf.function (Keras' train function included) is traced, and adds next to each selected op a
stateful `tf.numpy_function` that receives its tensors when the function runs, so the values are
those of the very step that trains. Records use npurun's dump format (`debug/dump_files.py`:
`index.jsonl` plus `.npy` files; `npurun dump ls|show|compare` read them).

Rules:
- Steps: each tf.function counts its own calls from 0 (Keras `fit`'s train function: the batch
  index over all epochs); `dump_step` selects them (None: every call), as the NPU counts the
  iterations of each graph. Nested tf.function calls belong to the outer call.
- Ops: those of tf.function graphs (ops run eagerly one by one are not dumped; tf.data functions
  neither), restricted to `dump_layer` (space-separated exact op names). Op names are TensorFlow's
  graph names (`sequential/dense/MatMul`), read from an op's outputs where it has some (the op
  callback is given the name a constant asked for, `x` for `RMSprop/mul/x`).
- `dump_mode` "output", "input" or "all" picks the tensors; `dump_data` "stats" writes statistics
  only. `enable_dump_debug` records the floating-point outputs holding inf or NaN (kind
  "overflow"); `dump_debug_mode`'s three values detect the same thing here.
- Tensors are seen before grappler's precision rewrite inserts its casts: under a low-precision
  mode a dumped output is the rewritten op's result cast back to its graph dtype.
- One dump directory per counted tf.function, created at its first record: `<dump_path>/eval-<timestamp>`
  for Keras' test function (fit's validation, evaluate), `predict-` for its predict function,
  `train-` for any other (Keras' train function, a custom loop's step). Each function's steps
  count from 0 and two functions' graphs hold the same op names (fit's validation runs the
  layers the train step runs; a second compile makes a new train function), so in one directory
  the later function's step 0 would overwrite the earlier one's files under the earlier records.
"""
from __future__ import annotations

import threading

from ...debug.dump_files import DumpWriter

_DATA_DTYPES = None  # filled lazily: dtypes whose values can be written
_PREFIXES = {"test_function": "eval", "predict_function": "predict"}  # Keras' names for them; others: "train"


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.local = threading.local()  # guards against the callback seeing its own numpy_function ops
        self.step = None  # the running outermost tf.function's call index, or None
        self.function = None  # (id, name) of that tf.function, or None
        self.calls = {}  # id(Function) -> calls so far
        self.depth = 0


_state = _State()
_installed = None  # (callback, original __call__) while installed


class DumpSettings:
    def __init__(self, dump_config):
        self.dump = bool(dump_config.enable_dump)
        self.debug = bool(dump_config.enable_dump_debug)
        self.mode = dump_config.dump_mode
        self.data = dump_config.dump_data
        self.steps = dump_config.steps
        self.layer = set(dump_config.dump_layer.split()) if dump_config.dump_layer else None
        self.root = dump_config.dump_path
        self.writers = {}  # id of a counted tf.function -> its DumpWriter (directories made at the first write)

    def writer(self, function) -> DumpWriter:
        """The dump directory's writer of the counted tf.function `function` ((id, name)); call under the lock."""
        key, name = function
        if key not in self.writers:
            self.writers[key] = DumpWriter(self.root, _PREFIXES.get(name, "train"))
        return self.writers[key]

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()

    def selected(self, step) -> bool:
        if step is None:
            return False
        return self.steps is None or any(a <= step <= b for a, b in self.steps)


def _writable(dtype) -> bool:
    import tensorflow as tf

    return (dtype.is_floating or dtype.is_integer or dtype == tf.bool) and dtype not in (tf.resource, tf.variant)


def _record(settings: DumpSettings, op_name: str, op_type: str, tensors: list, values: tuple):
    import numpy as np

    step, function = _state.step, _state.function
    if not settings.selected(step):
        return
    with _state.lock:
        writer = settings.writer(function)
        for (io, slot, tensor_name, floating), value in zip(tensors, values):
            if settings.dump and (settings.mode == "all" or settings.mode == io):
                writer.write(kind="tensor", step=step, op=op_name, op_type=op_type, io=io, slot=slot,
                             tensor=tensor_name, value=value, data=settings.data)
            if settings.debug and io == "output" and floating and not np.all(np.isfinite(value)):
                writer.write(kind="overflow", step=step, op=op_name, op_type=op_type, io=io, slot=slot,
                             tensor=tensor_name, value=value, data=settings.data)


def _callback(settings: DumpSettings):
    import tensorflow as tf

    def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is None or getattr(_state.local, "busy", False) or op_name is None:
            return None
        if "Dataset" in getattr(graph, "name", "") or op_type in ("NoOp", "Placeholder", "Identity", "IdentityN", "EagerPyFunc",
                                                                  "PyFunc", "PyFuncStateless"):
            return None
        op = getattr(outputs[0], "op", None) if outputs else None
        if op is not None:  # the graph's unique name: a Const's callback gets the name asked for ("x", "Const")
            op_name = op.name
        if settings.layer is not None and op_name not in settings.layer:
            return None
        picked = []
        if settings.dump and settings.mode in ("input", "all"):
            picked += [("input", i, t) for i, t in enumerate(inputs or ())]
        if settings.debug or settings.mode in ("output", "all"):
            picked += [("output", i, t) for i, t in enumerate(outputs or ())]
        picked = [(io, i, t) for io, i, t in picked if _writable(t.dtype)]
        if not picked:
            return None
        described = [(io, i, t.name, t.dtype.is_floating) for io, i, t in picked]
        _state.local.busy = True
        try:
            tf.numpy_function(lambda *values: _record(settings, op_name, op_type, described, values) or [],
                              [t for _io, _i, t in picked], Tout=[], stateful=True, name="npu_device_dump")
        finally:
            _state.local.busy = False
        return None

    return callback


def install(dump_config) -> None:
    """Start dumping as the dump config asks (nothing when neither switch is on)."""
    global _installed
    if _installed is not None or not (dump_config.enable_dump or dump_config.enable_dump_debug):
        return
    from tensorflow.python.eager.polymorphic_function import polymorphic_function
    from tensorflow.python.framework import op_callbacks

    settings = DumpSettings(dump_config)
    callback = _callback(settings)
    original = polymorphic_function.Function.__call__

    def counted_call(self, *args, **kwargs):
        if _state.depth:
            return original(self, *args, **kwargs)
        with _state.lock:
            step = _state.calls.get(id(self), 0)
            _state.calls[id(self)] = step + 1
        _state.step, _state.function, _state.depth = step, (id(self), getattr(self, "_name", None)), 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _state.step, _state.function, _state.depth = None, None, 0

    polymorphic_function.Function.__call__ = counted_call
    op_callbacks.add_op_callback(callback)
    _installed = (callback, original, settings)


def uninstall() -> None:
    global _installed
    if _installed is None:
        return
    from tensorflow.python.eager.polymorphic_function import polymorphic_function
    from tensorflow.python.framework import op_callbacks

    callback, original, settings = _installed
    op_callbacks.remove_op_callback(callback)
    polymorphic_function.Function.__call__ = original
    settings.close()
    _state.calls.clear()
    _installed = None


def dump_dirs() -> list:
    """The dump directories this process has written, in the order their functions first recorded."""
    if not _installed:
        return []
    return [w.path for w in _installed[2].writers.values() if w.path is not None]


def dump_dir():
    """The first dump directory this process wrote (None before the first record); see `dump_dirs`."""
    found = dump_dirs()
    return found[0] if found else None
