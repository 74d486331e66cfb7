"""`npu_device`, the Ascend adapter's TensorFlow 2 package, on TensorFlow 2.21 for CPUs/GPUs.

Scripts import it as `npu_device` while npurun's compatibility layer is active (`npurun run`,
`npurun.compat.activate(tf1=False)`): the coverage table (`coverage.py`, published in
docs/compat.md) maps each adapter name to what is here. Rules:

- `global_options()` is one `NpuConfig` per process (`configs.py`): its attributes are validated
  by npurun's option table as they are set.
- `open(device_id=None)` reads them (validated together by NPURunConfig), applies them to
  TensorFlow 2's runtime (`runtime.py`: precision, compile cache, XLA, fusion switches; dumps in
  `dump.py`; profiling through TensorFlow's profiler) and returns the device handle; a second
  `open()` of the same device returns the same handle, another device id is a RuntimeError, as on
  Ascend. Several ranks (`npurun launch -n N`, RANK_SIZE > 1): this process joins the others
  (npurun's collective session, `bridge.py`: server, bounded wait, barrier), so
  `npu_device.distribute` works.
- `handle.as_default()` makes it the global context (`global_npu_ctx()`, with `workers_num` and
  `worker_id`); ops run on TensorFlow's own devices (the CPU, or the GPU TensorFlow picks).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings

from . import configs

_lock = threading.Lock()
_options = None
_handles: dict = {}
_global_ctx = None
_profiling = None  # the profiler's output directory while it runs


def global_options():
    """The process's NpuConfig (created at first use)."""
    global _options
    with _lock:
        if _options is None:
            _options = configs.new_config()
        return _options


class NpuDeviceHandle:
    """What `open()` returns: the adapter's handle, for the device TensorFlow runs on here."""

    def __init__(self, device_id: int, workers_num: int, worker_id: int, plan=None):
        self._device_id = device_id
        self.workers_num = workers_num
        self.worker_id = worker_id
        self.plan = plan

    def name(self) -> str:
        return f"/job:localhost/replica:0/task:0/device:NPU:{self._device_id}"

    def scope(self):
        """A no-op scope: ops go where TensorFlow places them (there is no NPU device here)."""
        return contextlib.nullcontext()

    def is_cluster_worker(self) -> bool:
        return self.workers_num > 1 and self.workers_num > self.worker_id >= 0

    def as_default(self):
        global _global_ctx
        _global_ctx = self
        return self

    def __repr__(self):
        return f"<npu_device handle {self.name()} (rank {self.worker_id} of {self.workers_num})>"


def _rank_info():
    from ...distribute import ranks

    info = ranks.read_ranks()
    return info.rank_size, info.rank_id


def _start_profiling(profiling_config) -> None:
    global _profiling
    if profiling_config is None or not profiling_config.enable_profiling or _profiling is not None:
        return
    import tensorflow as tf

    from ...debug.dump_files import new_run_dir

    folder = new_run_dir(profiling_config.options.get("output"), "npu_device")
    tf.profiler.experimental.start(folder)
    _profiling = folder
    atexit.register(stop_profiling)


def stop_profiling() -> None:
    """Stop TensorFlow's profiler (at exit; tests call it): the trace is written then."""
    global _profiling
    if _profiling is None:
        return
    import tensorflow as tf

    _profiling = None
    with contextlib.suppress(Exception):
        tf.profiler.experimental.stop()


def open(device_id=None):  # noqa: A001 - the adapter's name
    """Apply `global_options()` to TensorFlow 2's runtime and return the device handle."""
    from . import dump, runtime

    if device_id is None:
        device_id = int(os.environ.get("ASCEND_DEVICE_ID", "0") or 0)
    with _lock:
        if device_id in _handles:
            return _handles[device_id]
        if _handles:
            raise RuntimeError(f"Failed create npu instance on device {device_id} as existed instance on "
                               f"{list(_handles)}")
    run_config = runtime.validated(global_options())
    workers_num, worker_id = _rank_info()
    if workers_num > 1:
        from . import bridge

        bridge.start()
    plan = runtime.apply(run_config)
    dump.install(run_config.dump_config) if run_config.dump_config is not None else None
    _start_profiling(run_config.profiling_config)
    handle = NpuDeviceHandle(device_id, workers_num, worker_id, plan)
    with _lock:
        _handles[device_id] = handle
    return handle


def global_npu_ctx():
    """The handle `as_default()` made the default, or None."""
    return _global_ctx


def npu_compat_function(func=None, *args, **kwargs):
    """`tf.function`, as the adapter's decorator of that name (which also turns XLA compilation off)."""
    import tensorflow as tf

    for key in ("jit_compile", "experimental_compile"):
        if kwargs.get(key):
            warnings.warn(f"npu_device.npu_compat_function: {key}=True is dropped, as the adapter drops it",
                          UserWarning, stacklevel=2)
            kwargs[key] = False
    if func is not None:
        return tf.function(func, *args, **kwargs)
    return lambda f: tf.function(f, *args, **kwargs)


def set_npu_loop_size(loop_size) -> None:
    """Accepted: the NPU's loop count for tf.function's iterations has no counterpart here."""
    if not isinstance(loop_size, int) or isinstance(loop_size, bool) or loop_size < 1:
        raise ValueError(f"npu_device.set_npu_loop_size: got {loop_size!r}; allowed: an int >= 1")


def is_inf_nan_enabled() -> bool:
    """True: CPUs and GPUs compute with IEEE inf and NaN (the NPU's 'INF-NAN' saturation mode)."""
    return True


def _reset_for_tests() -> None:
    """Forget the options, handles and dumps of this process (tests run several scripts in one)."""
    global _options, _global_ctx
    from . import dump, runtime

    dump.uninstall()
    stop_profiling()
    runtime.reset_environment()
    with _lock:
        _options = None
        _handles.clear()
        _global_ctx = None
