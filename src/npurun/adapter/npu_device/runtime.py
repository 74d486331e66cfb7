"""What `npu_device.open()` does with `global_options()`: the options take effect in TensorFlow 2's
runtime (eager ops, tf.function, Keras `fit`), through the same plan contributors NPURunConfig uses.

Rules:
- The options the script set are validated together by NPURunConfig itself (DumpConfig and
  ProfilingConfig for the sub-configs): a rule between options fails here, with NPURunConfig's
  message, owner `npu_device.global_options()`. Its warnings (no effect on this machine, not
  supported) are re-issued with that owner.
- The plan contributors that speak TensorFlow's ConfigProto and environment run as for a session
  (compile cache, precision, compilation, fusion switches, resources, XLA flags). What they ask is
  applied to TensorFlow 2's eager context, which every tf.function and Keras `fit` reads:
  grappler rewrite switches (auto mixed precision with the mixlist edits, layout, remapping, ...)
  into the context's ConfigProto, the JIT level through `tf.config.optimizer.set_jit`, inter-op
  threads and the TF32 switch through `tf.config`, environment variables (mixed-precision lists,
  TF_XLA_FLAGS / XLA_FLAGS, GPU threads) into `os.environ` for the rest of the process.
- Grappler rewrites graphs, not single eager ops: a precision mode acts on tf.function and Keras
  `fit` graphs; ops run one by one outside a tf.function stay float32 (said once in a warning
  when a low-precision mode is set).
- What only a tf.compat.v1 session can do (its hooks, graph transforms) is not done here; options
  whose whole mechanism is that warn (`configs.TF2_NO_EFFECT`); dumps and profiling have their
  TensorFlow 2 mechanism in `dump.py` and here (TensorFlow's profiler).
"""
from __future__ import annotations

import os
import warnings

from ...config import DumpConfig, NPURunConfig, ProfilingConfig
from ...config.table import Kind
from . import configs

_PLAN_CONTRIBUTORS = ("compile_cache", "precision", "compilation", "fusion_switches", "resources", "xla_flags")
_LOW_PRECISION = ("allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16", "force_fp16")


def _warn(message: str) -> None:
    warnings.warn(f"{configs.OWNER}: {message}", UserWarning, stacklevel=4)


def run_config_arguments(config) -> dict:
    """NPURunConfig keyword arguments for the options the script set (sub-configs as objects)."""
    kwargs, dump, profiling = {}, {}, {}
    for name, option, value, was_set in config.items():
        group, _, leaf = name.rpartition(".")
        if not was_set and not (not group and leaf in configs.TF2_DEFAULTS):
            continue  # (a TF 2 default that differs from NPURunConfig's is passed as if set)
        if group == "dump_config":
            dump[leaf] = value
        elif group == "profiling_config":
            profiling[leaf] = value
        elif configs.table_row(leaf) is option:  # a row of NPURunConfig's own table
            kwargs[leaf] = value
    v2 = getattr(config, "precision_mode_v2")
    if v2 is not None and "precision_mode" not in kwargs and v2 in configs.PRECISION_MODE_V2:
        kwargs["precision_mode"] = configs.PRECISION_MODE_V2[v2]
    if dump:
        kwargs["dump_config"] = DumpConfig(**dump)
    if profiling:
        kwargs["profiling_config"] = ProfilingConfig(**profiling)
    return kwargs


def validated(config) -> NPURunConfig:
    """NPURunConfig of the set options; its errors name npu_device's owner, its warnings too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run_config = NPURunConfig(**run_config_arguments(config))
        except (ValueError, TypeError) as error:
            renamed = type(error).__new__(type(error))  # the same class, its message naming npu_device
            BaseException.__init__(renamed, str(error).replace("NPURunConfig", configs.OWNER, 1))
            renamed.__dict__.update(error.__dict__)
            raise renamed from None
    for warning in caught:
        text = str(warning.message)
        text = text[len("NPURunConfig: "):] if text.startswith("NPURunConfig: ") else text
        _warn(text)
    for name, option, value, was_set in config.items():
        if not was_set or option.is_default(value):
            continue
        status, why = configs.kind_here(name, option)
        adapter_only = option.doc == configs.ADAPTER_ONLY_DOC
        if status == Kind.NO_EFFECT.value and (option.kind is Kind.EFFECT or adapter_only):
            _warn(f"option '{name}' is accepted and has no effect here: {why}")
    return run_config


def _contributors():
    from ...precision import modes
    from ...runtime import compilation, compile_cache, fusion_switches, resources, xla_flags

    named = {"compile_cache": compile_cache.contribute, "precision": modes.contribute,
             "compilation": compilation.contribute, "fusion_switches": fusion_switches.contribute,
             "resources": resources.contribute, "xla_flags": xla_flags.contribute}
    return tuple(named[n] for n in _PLAN_CONTRIBUTORS)


_saved_env: dict = {}


def apply(run_config: NPURunConfig):
    """Apply the plan of `run_config` to TensorFlow 2's eager context (module rules); the plan."""
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tensorflow.python.eager import context

    from ...precision.modes import TensorFloat32Hook
    from ...runtime.contributors import build_plan

    options = run_config.options
    plan = build_plan(options, "train", contributors=_contributors())
    for key, value in plan.env.items():
        _saved_env.setdefault(key, os.environ.get(key))
        os.environ[key] = value

    _cap_gpu_memory(tf, plan.config_proto)
    ctx = context.context()
    rewrite = plan.config_proto.graph_options.rewrite_options
    if rewrite.ByteSize():
        proto = config_pb2.ConfigProto()
        if ctx._config is not None:  # noqa: SLF001 - the eager context's ConfigProto, read by every tf.function
            proto.CopyFrom(ctx._config)
        proto.graph_options.rewrite_options.MergeFrom(rewrite)
        ctx._config = proto  # noqa: SLF001
        ctx._thread_local_data.function_call_options = None  # noqa: SLF001 - as set_experimental_options does
    if plan.config_proto.graph_options.optimizer_options.global_jit_level == config_pb2.OptimizerOptions.ON_1:
        tf.config.optimizer.set_jit("autoclustering")
    threads = plan.config_proto.inter_op_parallelism_threads
    if threads:
        try:
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError:
            _warn(f"stream_max_parallel_num asks for {threads} inter-op threads, but TensorFlow's runtime had "
                  f"started before npu_device.open(); set the option before anything runs")
    for hook in plan.hooks:
        if isinstance(hook, TensorFloat32Hook) and hook.enabled is False:
            tf.config.experimental.enable_tensor_float_32_execution(False)
    if options.get("precision_mode") in _LOW_PRECISION and (
            rewrite.auto_mixed_precision == rewriter_config_pb2.RewriterConfig.ON
            or rewrite.auto_mixed_precision_onednn_bfloat16 == rewriter_config_pb2.RewriterConfig.ON
            or rewrite.auto_mixed_precision_cpu == rewriter_config_pb2.RewriterConfig.ON):
        _warn(f"precision_mode={options['precision_mode']!r} rewrites tf.function and Keras fit graphs (grappler's "
              f"auto mixed precision); ops run eagerly one by one outside a tf.function stay float32")
    return plan


def _cap_gpu_memory(tf, config_proto) -> None:
    """The GPU memory cap the resources contributor planned (graph_memory_max_size + variable_memory_max_size,
    one virtual device per visible GPU, as NPURunConfig's sessions get it) through TensorFlow 2's documented
    mechanism: `tf.config.set_logical_device_configuration(gpu, [LogicalDeviceConfiguration(memory_limit=MiB)])`
    for each physical GPU, which must happen before the runtime initialises its devices."""
    devices = config_proto.gpu_options.experimental.virtual_devices
    if not devices:
        return
    gpus = tf.config.list_physical_devices("GPU")
    visible = config_proto.gpu_options.visible_device_list
    if visible:
        gpus = [gpus[int(index)] for index in visible.split(",") if int(index) < len(gpus)]
    for gpu, device in zip(gpus, devices):
        limit = int(device.memory_limit_mb[0])
        try:
            tf.config.set_logical_device_configuration(
                gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=limit)])
        except RuntimeError:
            _warn(f"graph_memory_max_size / variable_memory_max_size ask for a {limit} MiB cap on {gpu.name}, but "
                  f"TensorFlow's runtime had started before npu_device.open(); set the options and call open() "
                  f"before anything runs")
            return


def reset_environment() -> None:
    """Restore the environment variables `apply` set (tests; a script's process just ends)."""
    for key, value in _saved_env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    _saved_env.clear()
