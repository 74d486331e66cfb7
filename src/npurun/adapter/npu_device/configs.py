"""`npu_device.global_options()`: the adapter's option objects, backed by npurun's option table.

Rules:
- The attributes are the adapter's (`NpuConfig` and its sub-configs `dump_config`,
  `profiling_config`, `aoe_config`, `memory_config`, `experimental.multi_branches_config`, ...),
  with the values scripts set (strings, bools, ints). An option NPURunConfig also has is checked by
  the row of npurun's option table of that name (`npurun.config.options.OPTIONS`, DumpConfig's and
  ProfilingConfig's tables): a bad value raises at assignment the error NPURunConfig raises for it,
  naming `npu_device.global_options()` as the owner; its kind (effect / accepted, no effect here /
  not supported) is that row's, except where TensorFlow 2 cannot honour it (`TF2_NO_EFFECT`).
- An option only the TF 2 adapter has is checked against the adapter's own list of allowed
  values; it is read only by the Ascend graph engine, so its kind is "accepted, no effect here".
- Setting an attribute the adapter does not have raises ValueError naming the class and its options,
  as the adapter does. Defaults are the TF 2 adapter's: npurun's table's (the product document's) where
  the option is in it, except the few the TF 2 adapter sets otherwise (`TF2_DEFAULTS`: op_compiler_cache_mode
  'enable', hcom_parallel True, enable_exception_dump 2), which open() applies as if the script set them.
- Rules between options (dumping needs dump_path, modify_mixlist needs a mixed precision mode, ...)
  are checked when `npu_device.open()` reads the options, as on Ascend, by NPURunConfig itself.
Plain Python: no TensorFlow here.
"""
from __future__ import annotations

import dataclasses
import difflib

from ...config.dump import DumpConfig
from ...config.options import OPTIONS
from ...config.profiling import ProfilingConfig
from ...config.table import Kind, Option
from ...config.validators import anything, boolean, choice, integer

OWNER = "npu_device.global_options()"

_GE_ONLY = ("read only by the Ascend graph engine (CANN), which TensorFlow 2 here does not have; "
            "the script runs the same without it")

# Options NPURunConfig honours whose mechanism is a tf.compat.v1 session's (hooks, partition graphs, the device
# loop): TensorFlow 2's eager runtime and tf.function have no such session, so here they warn instead.
TF2_NO_EFFECT = {
    "is_tailing_optimization": "it overlaps NPUOptimizer's overflow check with the last gradient all-reduce; "
                               "Keras optimizers here check overflow after the all-reduce (NpuLossScaleOptimizer)",
    "hcom_parallel": "npu_device.distribute.all_reduce issues one collective per value, as the adapter does; "
                     "TensorFlow schedules them as the backward pass produces the gradients, whatever the setting",
    "enable_exception_dump": "npurun's exception dump wraps tf.compat.v1 session runs; eager ops and tf.function "
                             "report a failing op in the exception TensorFlow raises",
    "op_debug_level": "its artefacts come from a tf.compat.v1 session's partition graphs and XLA dumps of the "
                      "compiled step; TensorFlow 2 here compiles no step",
    "debug_dir": "see op_debug_level",
    "graph_run_mode": "TensorFlow 2 has no separate inference graph mode; eager code and tf.function run as "
                      "written",
}

_ADAPTER_ONLY_VALUES = {
    # name: (default, allowed values or None for any)
    "ac_parallel_enable": (None, ("0", "1")),
    "quant_dumpable": (None, ("0", "1")),
    "hcom_multi_mode": (None, None),
    "op_debug_config": (None, None),
    "deterministic": (0, (0, 1)),
    "graph_exec_timeout": (None, None),
    "topo_sorting_mode": (None, (0, 1)),
    "customize_dtypes": (None, None),
    "overflow_flag": (1, (0, 1)),
    "stream_sync_timeout": (-1, None),
    "event_sync_timeout": (-1, None),
    "execute_times": (-1, None),
    "external_weight": (False, (True, False)),
    "graph_compiler_cache_dir": (None, None),
    "input_fusion_size": (131072, None),
    "compile_dynamic_mode": (False, (True, False)),
    "precision_mode_v2": (None, ("fp16", "origin", "cube_fp16in_fp32out", "mixed_float16", "mixed_bfloat16",
                                 "cube_hif8", "mixed_hif8")),
    "export_compile_stat": (1, (0, 1, 2)),
    "aicore_num": (None, None),
    "oo_constant_folding": (True, (True, False)),
    "input_batch_cpy": (False, (True, False)),
    "shape_generalization_mode": ("STRICT", ("STRICT", "FULL", "ADAPTIVE")),
    "all_tensor_not_empty": (False, (True, False)),
    "auto_multistream_parallel_mode": (None, None),
    "oo_level": ("O3", ("O0", "O1", "O2", "O3")),
    "optimization_switch": (None, None),
}

ADAPTER_ONLY_DOC = "An option of the Ascend TensorFlow 2 adapter only."

# Defaults of the TF 2 adapter's NpuConfig that differ from NPURunConfig's (tf_adapter_2.x's npu_config.py);
# the row keeps NPURunConfig's validator, kind and mechanism. The TF 2 default applies when the script leaves
# the option alone (npu_device.open() passes it to NPURunConfig as if set).
TF2_DEFAULTS = {
    "op_compiler_cache_mode": ("enable", "the TF 2 adapter caches compiled ops unless told not to "
                                         "(NPURunConfig: 'disable')"),
    "hcom_parallel": (True, "the TF 2 adapter overlaps gradient all-reduces by default (NPURunConfig: False)"),
    "enable_exception_dump": (2, "the TF 2 adapter dumps a failing op's tensors in its lightweight form by default "
                                 "(NPURunConfig: 0)"),
}
_TF2_ROWS = {name: dataclasses.replace(OPTIONS[name], default=default) for name, (default, _why)
             in TF2_DEFAULTS.items()}


def table_row(name: str):
    """The option-table row `global_options()` uses for NPURunConfig option `name` (its TF 2 default), or None."""
    return _TF2_ROWS.get(name) or OPTIONS.get(name)

# precision_mode_v2 values with a precision_mode of the same meaning (the adapter's own pairing).
PRECISION_MODE_V2 = {"fp16": "force_fp16", "origin": "must_keep_origin_dtype",
                     "mixed_float16": "allow_mix_precision_fp16", "mixed_bfloat16": "allow_mix_precision_bf16"}


def _adapter_option(name: str, default, allowed, why: str = _GE_ONLY) -> Option:
    """An option only the adapter has: its allowed list, kind "accepted, no effect here"."""
    if allowed is None:
        validate, rule = anything(), "any value (the adapter does not check it)"
    elif all(isinstance(v, bool) for v in allowed):
        validate, rule = boolean(), "True or False"
    elif all(isinstance(v, int) for v in allowed):
        validate, rule = integer(choices=allowed), "one of " + ", ".join(map(str, allowed))
    else:
        validate, rule = choice(*allowed), "one of " + ", ".join(map(repr, allowed))
    return Option(name, default, validate, Kind.NO_EFFECT, rule=rule, mechanism=why,
                  doc=ADAPTER_ONLY_DOC)


class _Value:
    """One option's value slot: validated on assignment by its table row."""

    __slots__ = ("option", "value", "set")

    def __init__(self, option: Option):
        self.option, self.value, self.set = option, option.default, False


class NpuBaseConfig:
    """A group of options, as the adapter's class of that name: attributes are the options."""

    _CLASS = "NpuBaseConfig"

    def __init__(self, **slots):
        object.__setattr__(self, "_slots", dict(slots))

    def __getattr__(self, name):
        slots = self.__dict__.get("_slots", {})
        if name not in slots:
            raise AttributeError(f"{self._CLASS} has no option {name!r}")
        slot = slots[name]
        return slot.value if isinstance(slot, _Value) else slot

    def __setattr__(self, name, value):
        slots = self._slots
        if name not in slots:
            close = difflib.get_close_matches(name, list(slots), n=1, cutoff=0.7)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{self._CLASS} has no option {name}{hint}, all options {list(slots)}")
        slot = slots[name]
        if not isinstance(slot, _Value):
            raise ValueError(f"{self._CLASS}.{name} is a group of options; set its attributes instead")
        slot.value = slot.option.check(value, OWNER)
        slot.set = True

    def __dir__(self):
        return sorted(self._slots)

    def items(self, prefix: str = ""):
        """(dotted name, Option, value, set by the script) for every option, sub-configs included."""
        for name, slot in self._slots.items():
            if isinstance(slot, _Value):
                yield prefix + name, slot.option, slot.value, slot.set
            else:
                yield from slot.items(prefix + name + ".")

    def as_dict(self) -> dict:
        """The options the script set (dotted name -> value), as the adapter's as_dict gives them."""
        return {name: value for name, _option, value, was_set in self.items() if was_set}

    def __repr__(self):
        return f"{self._CLASS}({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"


def _group(class_name: str, **slots) -> NpuBaseConfig:
    config = NpuBaseConfig(**slots)
    object.__setattr__(config, "_CLASS", class_name)
    return config


def _table(name: str, table=OPTIONS) -> _Value:
    return _Value(_TF2_ROWS[name] if table is OPTIONS and name in _TF2_ROWS else table[name])


def _adapter(name: str, default=None, allowed=None, why: str = _GE_ONLY) -> _Value:
    return _Value(_adapter_option(name, default, allowed, why))


def new_config() -> NpuBaseConfig:
    """A fresh `NpuConfig`: what `global_options()` holds."""
    dump = _group("NpuDumpConfig", **{n: _table(n, DumpConfig.OPTIONS) for n in (
        "enable_dump", "dump_path", "dump_step", "dump_mode", "enable_dump_debug", "dump_debug_mode", "dump_data",
        "dump_layer")})
    profiling = _group("NpuProfilingConfig", **{n: _table(n, ProfilingConfig.OPTIONS)
                                                for n in ("enable_profiling", "profiling_options")})
    aoe = _group("NpuAoeConfig", aoe_mode=_table("aoe_mode"), work_path=_table("work_path"),
                 aoe_config_file=_adapter("aoe_config_file"))
    memory = _group("MemoryConfig", atomic_clean_policy=_adapter("atomic_clean_policy", 0, (0, 1)),
                    static_memory_policy=_adapter("static_memory_policy", 0, (0, 1, 2, 3, 4)),
                    variable_use_1g_huge_page=_adapter("variable_use_1g_huge_page", 0, (0, 1, 2)))
    shapes = ("TensorFlow 2 runs any input shape as it comes (tf.function traces once per new shape); the "
              "graph engine's fixed gears of dynamic dims do not exist here")
    multi_branches = _group("NpuMultiBranchesConfig", input_shape=_adapter("input_shape", why=shapes),
                            dynamic_node_type=_adapter("dynamic_node_type", None, ("0",), why=shapes),
                            dynamic_dims=_adapter("dynamic_dims", why=shapes))
    experimental = _group(
        "NpuExperimentalConfig", multi_branches_config=multi_branches,
        logical_device_deploy_config=_group("LogicalDeviceDeployConfig",
                                            logical_device_id=_adapter("logical_device_id"),
                                            logical_device_cluster_deploy_mode=_adapter(
                                                "logical_device_cluster_deploy_mode")),
        model_deploy_config=_group("ModelDeployConfig", deploy_inject_config=_adapter("deploy_inject_config")),
        graph_memory_optimize_config=_group("GraphMemoryOptimizeConfig", recompute=_adapter("recompute")),
        resource_config_path=_adapter("resource_config_path"),
        graph_parallel_option_path=_adapter("graph_parallel_option_path"),
        enable_graph_parallel=_adapter("enable_graph_parallel", False, (True, False)))
    slots = {}
    for name in ("graph_run_mode", "graph_memory_max_size", "variable_memory_max_size", "variable_format_optimize",
                 "enable_scope_fusion_passes", "fusion_switch_file", "precision_mode", "op_select_implmode",
                 "optypelist_for_implmode", "op_compiler_cache_mode", "op_compiler_cache_dir",
                 "stream_max_parallel_num", "hcom_parallel", "is_tailing_optimization", "op_debug_level",
                 "debug_dir", "modify_mixlist", "enable_exception_dump", "enable_small_channel",
                 "op_precision_mode", "jit_compile", "auto_tune_mode"):
        slots[name] = _table(name)
    for name, spec in _ADAPTER_ONLY_VALUES.items():
        if spec is not None:
            slots[name] = _adapter(name, *spec)
    slots.update(dump_config=dump, profiling_config=profiling, aoe_config=aoe, memory_config=memory,
                 experimental=experimental)
    return _group("NpuConfig", **slots)


# The TensorFlow 2 mechanism of the sub-configs whose NPURunConfig mechanism is a session hook.
TF2_MECHANISM = {
    "dump_config": "an op callback adds a tf.numpy_function next to each op of tf.function graphs, receiving its "
                   "tensors when the step runs (npu_device/dump.py)",
    "profiling_config": "TensorFlow's profiler: a trace in TensorBoard's profile format under profiling_options' "
                        "output, from open() to the end of the process (training_trace / task_trace switches are "
                        "validated, the trace holds both)",
}


def kind_here(name: str, option: Option) -> tuple[str, str]:
    """(status, why) of dotted option `name` under npu_device on TensorFlow 2."""
    group, _, leaf = name.rpartition(".")
    if leaf in TF2_NO_EFFECT and option.kind is Kind.EFFECT:
        return Kind.NO_EFFECT.value, TF2_NO_EFFECT[leaf]
    if group in TF2_MECHANISM:
        return option.status, f"{option.doc} {TF2_MECHANISM[group]}"
    return option.status, option.mechanism
