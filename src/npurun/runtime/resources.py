"""Device resources: memory caps, engine parallelism and kernel auto-tuning.

Rules:
  - `graph_memory_max_size` + `variable_memory_max_size` (either set; the other then takes its
    Ascend default, 26 GB / 5 GB) cap the GPU memory TensorFlow may take: each visible GPU becomes
    one virtual device with `memory_limit_mb` = the sum (rounded down to MiB). TensorFlow sets GPU
    devices up once per process, so the cap of the first session in a process is the one in
    force. On a machine without a GPU they have no effect: a UserWarning says so.
  - `stream_max_parallel_num`:
      DNN_VM_TF:N (Ascend's AI CPU engine, host-side ops) -> the inter-op thread pool has N
        threads: at most N ops run at the same time. Set as `inter_op_parallelism_threads` and as a
        named session pool (`session_inter_op_thread_pool`, shared by sessions asking for the
        same N), because TensorFlow's default global pool is sized once, by the first session.
      DNN_V100:N (Ascend's AI Core engine, device compute) -> on a GPU,
        TF_GPU_THREAD_MODE=gpu_private and TF_GPU_THREAD_COUNT=N: N dedicated threads launch GPU
        kernels (TensorFlow uses one compute stream per GPU, so the kernel-launch parallelism is
        what can be set). On a CPU: no separate compute engine, a UserWarning says so.
  - `auto_tune_mode` (GA, RL): on a GPU, cuDNN/cuBLAS autotuning for TensorFlow kernels
    (TF_CUDNN_USE_AUTOTUNE=1) and, when XLA compiles, XLA's full autotuning with correctness
    checks (`--xla_gpu_autotune_level=4`); GA (cube ops: convolutions, matmuls) and RL (vector
    ops: XLA's fused kernels) both map to these, as TensorFlow has no separate switches. On a CPU
    neither exists: a UserWarning says so.
"""
from __future__ import annotations

import warnings

from ..config import parsers
from . import xla_flags
from .plan import Options, SessionPlan

DEFAULT_GRAPH_MEMORY = 26 * 1024 ** 3
DEFAULT_VARIABLE_MEMORY = 5 * 1024 ** 3
MIB = 1024 ** 2


def memory_limit(options: Options) -> int | None:
    """The GPU memory cap in bytes, or None when neither memory option is set."""
    graph, variable = options.get("graph_memory_max_size"), options.get("variable_memory_max_size")
    if graph is None and variable is None:
        return None
    return (DEFAULT_GRAPH_MEMORY if graph is None else graph) + (DEFAULT_VARIABLE_MEMORY if variable is None
                                                                  else variable)


def cap_gpu_memory(config_proto, limit: int, visible_gpus: int) -> None:
    """One virtual device of `limit` bytes per visible GPU (replacing any given before)."""
    experimental = config_proto.gpu_options.experimental
    del experimental.virtual_devices[:]
    for _ in range(visible_gpus):
        experimental.virtual_devices.add().memory_limit_mb.append(float(limit // MIB))


def set_inter_op_threads(config_proto, threads: int) -> None:
    """At most `threads` ops run at once in sessions created from `config_proto`."""
    config_proto.inter_op_parallelism_threads = threads
    del config_proto.session_inter_op_thread_pool[:]
    config_proto.session_inter_op_thread_pool.add(num_threads=threads, global_name=f"npurun_inter_op_{threads}")


def _gpu_count(config_proto) -> int:
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    visible = config_proto.gpu_options.visible_device_list
    return len(visible.split(",")) if gpus and visible else len(gpus)


def _warn(message: str) -> None:
    warnings.warn(f"npurun: {message}", UserWarning, stacklevel=3)


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    gpus = _gpu_count(plan.config_proto)
    limit = memory_limit(options)
    if limit is not None:
        if gpus:
            cap_gpu_memory(plan.config_proto, limit, gpus)
        else:
            names = [n for n in ("graph_memory_max_size", "variable_memory_max_size") if options.get(n) is not None]
            _warn(f"{' and '.join(names)} cap GPU memory and have no effect on this machine, which has no GPU "
                  f"(TensorFlow's CPU memory is not capped per session)")

    if options.get("stream_max_parallel_num"):
        for engine, n in parsers.parse_stream_parallel(options["stream_max_parallel_num"]):
            if engine == "DNN_VM_TF":
                set_inter_op_threads(plan.config_proto, n)
            elif gpus:
                plan.env["TF_GPU_THREAD_MODE"] = "gpu_private"
                plan.env["TF_GPU_THREAD_COUNT"] = str(n)
            else:
                _warn(f"stream_max_parallel_num DNN_V100:{n} sets GPU compute parallelism and has no effect on "
                      f"this machine, which has no GPU (DNN_VM_TF sets the CPU's inter-op threads)")

    if options.get("auto_tune_mode"):
        if gpus:
            from .compilation import resolve_jit

            plan.env["TF_CUDNN_USE_AUTOTUNE"] = "1"
            if resolve_jit(options).compiles:
                xla_flags.request(plan, xla_flags.XLA_FLAGS, "--xla_gpu_autotune_level=4")
        else:
            _warn(f"auto_tune_mode={options['auto_tune_mode']!r} tunes GPU kernels and has no effect on this "
                  f"machine, which has no GPU")
