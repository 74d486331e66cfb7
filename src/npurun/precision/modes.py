"""The precision contributor: precision_mode, modify_mixlist and the implementation modes -> the plan.

What each precision_mode does here (`contribute`):

Low-precision modes first go through the machine's policy (`policy.decide`, TensorFlow-free):
on a CPU where the low dtype was not measured within 1.2x of float32's speed they run in
float32 with one warning, unless NPURUN_FORCE_LOW_PRECISION=1. With NPURUN_FP16_AS_BF16=1 on a
CPU with fast bf16 the fp16 modes run as `allow_mix_precision_bf16` does, with one warning naming
the substitution. When they do lower ops:

| precision_mode | session |
|---|---|
| None / `allow_fp32_to_fp16` | graph unchanged; TF32 as the process has it (TensorFlow's default: on) |
| `force_fp32`, `must_keep_origin_dtype` | graph unchanged; TF32 off while the session runs |
| `allow_mix_precision`, `allow_mix_precision_fp16` | grappler fp16 auto mixed precision: `auto_mixed_precision` on a GPU; on a CPU `auto_mixed_precision_cpu` with real float16 kernels (`..._EMULATE_FP16=0`, see below) |
| `allow_mix_precision_bf16` | grappler `auto_mixed_precision_onednn_bfloat16` (needs oneDNN on in the process) |
| `force_fp16` | the fp16 pass with its allow list widened to every stateless op type that has a float16 kernel on the device, all other lists emptied of them: every such float op computes in float16, whatever the lists say |

Why `EMULATE_FP16=0` on CPU: TensorFlow 2.21's emulation (float32 compute with fp16-rounded values)
crashes the process (segmentation fault while it inserts the fp16 casts) on ordinary training graphs,
e.g. `tanh(exp(matmul(x, w) * 0.01))` trained with GradientDescent; with real fp16 kernels the
same graphs run. fp16 on a CPU is for checking numerics, not speed (bf16 is the CPU's mode).

Why `force_fp16` widens lists instead of `..._LEVEL=UNSAFE_FORCE_ALL`: that level ignores the deny
list (so `high_precision` ops could not stay float32) and also forces ops without a float16
kernel.

Per-op precision (`op_precision_mode` ini, else `op_select_implmode` + `optypelist_for_implmode`):
`high_precision` op types go to the deny list under the low-precision modes; `high_precision`
with no list (global) turns TF32 off; `high_performance` changes nothing (the default lists
decide). op_precision_mode wins over the other two when it is set.

TF32 is a process-wide switch in TensorFlow (`tf.config.experimental.enable_tensor_float_32_execution`):
`TensorFloat32Hook` turns it off when the session starts (hook `begin`) and restores the previous
value when it ends normally (`end`); two sessions running at once in one process share it. It only
matters on NVIDIA GPUs from Ampere on.

The list environment variables are process-wide too: `plan.env` holds them and the Estimator sets
them only while its session runs (`SessionPlan.environment()`); sessions built in parallel threads
with different lists would race.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow.python.framework import kernels, op_def_registry
from tensorflow.python.util import _pywrap_util_port

from ..config import parsers
from . import lists, op_names, policy
from .loss_scale import LossScaleLoggingHook

_v1 = tf.compat.v1
ON = rewriter_config_pb2.RewriterConfig.ON

DEFAULT_MODE = "allow_fp32_to_fp16"
FP16_MIXED_MODES = ("allow_mix_precision", "allow_mix_precision_fp16")
BF16_MODE = "allow_mix_precision_bf16"
FORCE_FP16 = "force_fp16"
FULL_FP32_MODES = ("force_fp32", "must_keep_origin_dtype")
EMULATE_FP16_ENV = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_EMULATE_FP16"
NEVER_FORCED = frozenset({"Const", "SoftmaxCrossEntropyWithLogits"})  # as TensorFlow's own force-all mode


# ---- kernels ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _kernel_dtypes(device_type: str) -> dict:
    """op type -> the dtypes its kernels on `device_type` accept (from the kernel registry)."""
    table: dict[str, set] = {}
    for kernel in kernels.get_all_registered_kernels().kernel:
        if kernel.device_type != device_type:
            continue
        accepted = table.setdefault(kernel.op, set())
        for constraint in kernel.constraint:
            accepted.update(constraint.allowed_values.list.type)
    return table


def has_kernel(op: str, dtype: str, device_type: str) -> bool:
    """Whether `op` has a kernel on `device_type` ("CPU"/"GPU") for `dtype` ("float16"/"bfloat16")."""
    return tf.as_dtype(dtype).as_datatype_enum in _kernel_dtypes(device_type).get(op, ())


@functools.lru_cache(maxsize=None)
def forceable_ops(device_type: str) -> frozenset:
    """Op types force_fp16 lowers: a float16 kernel on the device, stateless, no reference arguments."""
    result = set()
    for op in _kernel_dtypes(device_type):
        if op in NEVER_FORCED or not has_kernel(op, "float16", device_type):
            continue
        op_def = op_def_registry.get(op)
        if op_def is None or op_def.is_stateful:
            continue
        if any(arg.is_ref for arg in list(op_def.input_arg) + list(op_def.output_arg)):
            continue
        result.add(op)
    return frozenset(result)


def onednn_enabled() -> bool:
    """Whether TensorFlow's oneDNN is on in this process (fixed when TensorFlow starts)."""
    return bool(_pywrap_util_port.IsMklEnabled())


# ---- per-op precision ---------------------------------------------------------------------------------
@dataclass
class ImplModes:
    """The implementation-mode choice: a global mode (None when per op) and per-op-type modes."""

    global_mode: str | None = None
    per_op: dict = field(default_factory=dict)  # TensorFlow op type -> high_precision | high_performance

    @property
    def high_precision_ops(self) -> tuple:
        return tuple(op for op, mode in self.per_op.items() if mode == "high_precision")


def resolve_impl_modes(options) -> ImplModes:
    """op_precision_mode (ini) if set, else op_select_implmode with or without optypelist_for_implmode."""
    if options.get("op_precision_mode") is not None:
        with open(options["op_precision_mode"], encoding="utf-8") as handle:
            entries = parsers.parse_op_precision_ini(handle.read())
        per_op = {}
        for ascend_op, mode in entries:
            for op in op_names.translate([ascend_op], "op_precision_mode"):
                per_op[op] = mode
        return ImplModes(None, per_op)
    mode = options.get("op_select_implmode")
    if mode is None:
        return ImplModes()
    if options.get("optypelist_for_implmode") is None:
        return ImplModes(mode)
    ops = op_names.translate(parsers.parse_comma_list(options["optypelist_for_implmode"]), "optypelist_for_implmode")
    return ImplModes(None, {op: mode for op in ops})


# ---- TF32 -----------------------------------------------------------------------------------------------
class TensorFloat32Hook(_v1.train.SessionRunHook):
    """Sets TensorFloat-32 execution for the session's lifetime and restores the previous value."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._previous = None

    def begin(self):
        self._previous = tf.config.experimental.tensor_float_32_execution_enabled()
        tf.config.experimental.enable_tensor_float_32_execution(self.enabled)

    def end(self, session):
        if self._previous is not None:
            tf.config.experimental.enable_tensor_float_32_execution(self._previous)
            self._previous = None


# ---- the contributor --------------------------------------------------------------------------------------
def _uses_gpu(plan) -> bool:
    if plan.device.upper().startswith("/DEVICE:CPU"):
        return False
    return bool(tf.config.list_physical_devices("GPU"))


def _mixlist_edits(options):
    if options.get("modify_mixlist") is None:
        return None
    with open(options["modify_mixlist"], encoding="utf-8") as handle:
        return parsers.parse_mixlist(handle.read())


def contribute(options, mode: str, plan) -> None:
    """Map precision_mode, modify_mixlist and the implementation modes into `plan`."""
    precision_mode = options.get("precision_mode") or DEFAULT_MODE
    impl = resolve_impl_modes(options)
    if precision_mode in FULL_FP32_MODES or impl.global_mode == "high_precision":
        plan.hooks.append(TensorFloat32Hook(enabled=False))
    if mode == "train":
        plan.hooks.append(LossScaleLoggingHook(options.get("log_step_count_steps")))
    if precision_mode not in FP16_MIXED_MODES + (BF16_MODE, FORCE_FP16):
        return

    decision = policy.decide(precision_mode, gpu=_uses_gpu(plan), features=policy.cpu_features(),
                             force=policy.forced(), substitute=policy.substituting())
    if decision.dtype is None:  # the machine's policy: float32 here (policy.py says why)
        policy.warn_once(decision)
        return
    policy.warn_once(decision)  # warns only for a bf16-for-fp16 substitution (NPURUN_FP16_AS_BF16=1)

    rewrite = plan.config_proto.graph_options.rewrite_options
    if precision_mode == BF16_MODE or decision.substituted:
        dtype, device_type = "bfloat16", "CPU"
        if not onednn_enabled():
            warnings.warn("npurun precision: precision_mode='allow_mix_precision_bf16' needs TensorFlow's oneDNN, "
                          "which is off in this process (TensorFlow turns it on by default only on CPUs with "
                          "AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX); set TF_ENABLE_ONEDNN_OPTS=1 before "
                          "TensorFlow is imported. Without it the graph stays float32.", UserWarning, stacklevel=2)
        if _uses_gpu(plan):
            warnings.warn("npurun precision: TensorFlow's bf16 rewrite processes CPU ops only; ops placed on the "
                          "GPU stay float32", UserWarning, stacklevel=2)
        rewrite.auto_mixed_precision_onednn_bfloat16 = ON
    else:
        dtype, device_type = "float16", decision.device
        if device_type == "GPU":
            rewrite.auto_mixed_precision = ON
        else:
            rewrite.auto_mixed_precision_cpu = ON
            plan.env[EMULATE_FP16_ENV] = "0"

    lowerable = functools.partial(has_kernel, dtype=dtype, device_type=device_type)
    drop = [op for op in lists.default_list(dtype, "allow") if not lowerable(op)]
    widen = sorted(forceable_ops(device_type)) if precision_mode == FORCE_FP16 and dtype == "float16" else ()
    list_plan = lists.plan_lists(dtype, _mixlist_edits(options), impl.high_precision_ops, widen_allow=widen,
                                 drop=drop, lowerable=lowerable)
    plan.env.update(list_plan.environment())
