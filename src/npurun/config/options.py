"""The option table: every constructor option of NPURunConfig, declared once.

Construction, validation, the parameter-map codec, `npurun explain`, the README's option table and
the tests all read `OPTIONS`. To add or change an option, change its row here; nothing else names
an option's default or rule.

Rows follow the product document's order: first the options inherited from
`tf.estimator.RunConfig`, then those NPURunConfig adds.
"""
from __future__ import annotations

from types import MappingProxyType

from . import parsers
from .dump import DumpConfig
from .profiling import ProfilingConfig
from .table import Kind, Nested, OneDnnDependence, Option, Scalar
from .xla_advice import CPU_CONV_LOOP_SLOWDOWN
from .validators import (anything, boolean, choice, converted, directory, existing_file, instance_of, integer,
                         number, parsed, text)

EFFECT, NO_EFFECT, NOT_SUPPORTED = Kind.EFFECT, Kind.NO_EFFECT, Kind.NOT_SUPPORTED

PRECISION_MODES = ("allow_fp32_to_fp16", "force_fp16", "force_fp32", "must_keep_origin_dtype",
                   "allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16")
MIXED_PRECISION_MODES = ("allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16")
IMPL_MODES = ("high_precision", "high_performance")
MEMORY_LIMIT = 256 * 1024 ** 3  # 274877906944 bytes, the documented upper bound of each memory option
# Seconds that become ConfigProto.operation_timeout_in_ms (an int64 of milliseconds).
TIMEOUT_SECONDS_MAX = (2 ** 63 - 1) // 1000
# The device loop counts its iterations in an int32 tf.while_loop counter, and its loss buffer has
# iterations_per_loop + 1 slots.
ITERATIONS_PER_LOOP_MAX = 2 ** 31 - 2


def _b(key):
    return Scalar(key, "b")


def _i(key):
    return Scalar(key, "i")


def _s(key):
    return Scalar(key, "s")


# The Ascend adapter's own `jit_compile` parameter-map entry is a bool (ModelZoo's Face-ResNet50, OpenPose).
_ADAPTER_JIT_COMPILE = ("the Ascend adapter's switch between compiling operators online (True) and using their "
                        "prebuilt binaries (False), which has no counterpart here: accepted, no effect; npurun's "
                        "jit_compile (XLA) is set as a string, 'auto', 'true' or 'false'")


def _is_config_proto(value) -> bool:
    # Duck-typed so that validating a config never imports TensorFlow.
    return type(value).__name__ == "ConfigProto" and hasattr(value, "graph_options")


def _is_ps_strategy(value) -> bool:
    return any("ParameterServerStrategy" in cls.__name__ for cls in type(value).__mro__)


_memory = converted(parsers.parse_memory_size, f"an int or a numeric string of bytes (or a product of them, "
                                               f"'21*1024*1024*1024') in [0, {MEMORY_LIMIT}]",
                    accepts=(int, str))
_memory_codec = lambda key: Scalar(key, "s", to_raw=parsers.format_memory_size, from_raw=parsers.parse_memory_size)

_OPTIONS = (
    # ---- inherited from tf.estimator.RunConfig ----------------------------------------------------
    Option("model_dir", None, directory(), EFFECT, inherited=True,
           rule="a directory path or None; must not differ from NPUEstimator's model_dir; if neither sets it, "
                "model_dir_XXXXXXXXXX is created in the current directory",
           doc="Where checkpoints, summaries and exported models are written.",
           mechanism="checkpoints, event files and exports under this directory"),
    Option("tf_random_seed", None, integer(), EFFECT, inherited=True,
           rule="an int or None",
           doc="Graph-level random seed used when variables are initialised.",
           mechanism="tf.compat.v1.set_random_seed on the Estimator's graph: same seed and data, same losses"),
    Option("save_summary_steps", 0, integer(lo=0, whole_floats=True), EFFECT, inherited=True, nullable=False,
           rule="an int >= 0 (a float with no fraction, as 1e9, is that int); 0 disables",
           doc="Write TensorBoard summaries every this many steps.",
           mechanism="summary ops run and written to event files every N steps (first loop boundary at or "
                     "after each multiple when iterations_per_loop > 1)"),
    Option("save_checkpoints_steps", None, integer(lo=0, whole_floats=True), EFFECT, inherited=True,
           rule="an int >= 0 or None; not together with save_checkpoints_secs; both None means 100; 0 disables",
           doc="Save a checkpoint every this many global steps.",
           mechanism="tf.compat.v1.train.Saver at step boundaries (loop boundaries when looping)"),
    Option("save_checkpoints_secs", None, number(gt=0), EFFECT, inherited=True,
           rule="a number > 0 or None; not together with save_checkpoints_steps",
           doc="Save a checkpoint every this many seconds of wall time.",
           mechanism="tf.compat.v1.train.Saver, checked at each host call"),
    Option("session_config", None, instance_of("tf.compat.v1.ConfigProto", _is_config_proto), EFFECT,
           inherited=True,
           rule="a tf.compat.v1.ConfigProto or None",
           doc="Session settings; an NpuOptimizer custom-optimizer entry in it is read as options.",
           mechanism="merged into the session's ConfigProto; its NpuOptimizer entry is decoded and removed"),
    Option("keep_checkpoint_max", 5, integer(lo=0, whole_floats=True), EFFECT, inherited=True,
           rule="an int >= 0 or None; 0 or None keeps all",
           doc="How many recent checkpoints to keep (the disk needs room for N+1: a new one is complete before "
               "the oldest is deleted).",
           mechanism="Saver(max_to_keep=N)"),
    Option("keep_checkpoint_every_n_hours", 10000, number(gt=0), EFFECT, inherited=True, nullable=False,
           rule="a number > 0 (10000 effectively disables it)",
           doc="Also keep one checkpoint per this many hours (needs a large keep_checkpoint_max).",
           mechanism="Saver(keep_checkpoint_every_n_hours=N)"),
    Option("log_step_count_steps", 100, integer(lo=1, whole_floats=True), EFFECT, inherited=True,
           rule="an int > 0 (a float with no fraction, as 1e9, is that int) or None (None disables)",
           doc="Log the loss and global_step/sec every this many steps.",
           mechanism="INFO log lines and a global_step/sec summary every N steps (at loop boundaries)"),
    Option("train_distribute", None, anything(), NOT_SUPPORTED, inherited=True,
           rule="any value; stored for migration tooling only",
           doc="Distribution strategy of tf.estimator.RunConfig; only the migration tool uses it.",
           mechanism="stored, not used: distribution is set with `distribute`"),
    Option("eval_distribute", None, anything(), NOT_SUPPORTED, inherited=True,
           rule="any value; stored for migration tooling only",
           doc="Distribution strategy for evaluation; only the migration tool uses it.",
           mechanism="stored, not used: distribution is set with `distribute`"),

    # ---- added by NPURunConfig ----------------------------------------------------------------------
    Option("iterations_per_loop", 1, integer(lo=1, hi=ITERATIONS_PER_LOOP_MAX, why="the device loop's counter is an int32"), EFFECT, nullable=False, codec=_i("iterations_per_loop"),
           rule="an int in [1, 2147483646]; 1 with mix_compile_mode=True; the steps of each train() call must be a multiple",
           doc="Training steps run per Session.run call (a device-side loop).",
           mechanism="the training step inside a tf.while_loop of N iterations with the input get_next inside; "
                     "global_step advances by N per host call"),
    Option("profiling_config", None, instance_of("npurun.ProfilingConfig", lambda v: isinstance(v, ProfilingConfig)), EFFECT,
           codec=Nested(ProfilingConfig),
           rule="a ProfilingConfig or None",
           doc="Profiling switch and options.",
           mechanism="per-iteration training trace and per-op Chrome trace from the runtime's step statistics"),
    Option("dump_config", None, instance_of("npurun.DumpConfig", lambda v: isinstance(v, DumpConfig)), EFFECT, codec=Nested(DumpConfig),
           rule="a DumpConfig or None",
           doc="Tensor dump and overflow detection switch and options.",
           mechanism="selected ops' tensors written as .npy files with a JSON index"),
    Option("enable_data_pre_proc", True, boolean(), EFFECT, nullable=False, codec=_b("enable_data_pre_proc"),
           rule="True or False; False needs iterations_per_loop=1",
           doc="Run the input pipeline's get_next inside the device loop (needed for loop sinking).",
           mechanism="True: get_next inside the tf.while_loop; False: input fetched per step on the host"),
    Option("precision_mode", None, choice(*PRECISION_MODES), EFFECT, codec=_s("precision_mode"),
           rule="one of " + ", ".join(PRECISION_MODES) + "; None means allow_fp32_to_fp16",
           doc="Operator precision mode.",
           mechanism="grappler auto mixed precision (fp16 on a GPU; on a CPU only where measured at most 1.2x slower "
                     "than float32, else float32 with a warning; NPURUN_FORCE_LOW_PRECISION=1 forces it; "
                     "NPURUN_FP16_AS_BF16=1 runs the fp16 modes in bf16 on CPUs with fast bf16), list edits, "
                     "TF32 switch",
           onednn=OneDnnDependence(
               off="allow_mix_precision_bf16 does nothing, the bf16 rewrite needs oneDNN (set TF_ENABLE_ONEDNN_OPTS=1 "
                   "before TensorFlow starts; `npurun train` does when it is unset)",
               no_effect_off=("allow_mix_precision_bf16",))),
    Option("enable_reduce_precision", False, boolean(), NOT_SUPPORTED, nullable=False,
           codec=_b("enable_reduce_precision"),
           rule="True or False", doc="Not supported in the current version (product document).",
           mechanism="none"),
    Option("variable_format_optimize", True, boolean(), EFFECT, nullable=False,
           codec=_b("variable_format_optimize"),
           rule="True or False",
           doc="Convert variables to the layout the device prefers.",
           mechanism="grappler layout_optimizer: False turns it off (True keeps session_config's setting, on "
                     "by default)",
           # Measured (tests/runtime/test_fusion_switches.py, both settings): the layout optimizer converts
           # NCHW convolutions to NHWC with oneDNN on too; what False leaves behind differs.
           onednn=OneDnnDependence(
               on="with False an NCHW convolution runs as written in oneDNN's NCHW kernel; with True the layout "
                  "optimizer still converts it to NHWC (plus transposes) when session_config's "
                  "cpu_layout_conversion asks",
               off="TensorFlow's CPU convolutions have no NCHW kernel: with False an NCHW convolution fails; with "
                   "True the layout optimizer converts it to NHWC when session_config's cpu_layout_conversion "
                   "asks")),
    Option("mix_compile_mode", False, boolean(), EFFECT, nullable=False, codec=_b("mix_compile_mode"),
           rule="True or False; True needs iterations_per_loop=1",
           doc="False: the whole step is compiled (full sink); True: what cannot compile runs in TensorFlow.",
           mechanism="when jit_compile compiles: the whole step (device loop) is one XLA computation and an op "
                     "XLA cannot compile is an error naming it (False); XLA auto-clustering, the rest in "
                     "TensorFlow (True)"),
    Option("jit_compile", "auto", choice("auto", "true", "false"), EFFECT, nullable=False,
           codec=Scalar("jit_compile", "s", other_meaning=(("b", _ADAPTER_JIT_COMPILE),)),
           rule="'auto', 'true' or 'false' (npurun extension); 'auto' compiles on a GPU, not on a CPU",
           doc="Whether XLA compiles the training step (with iterations_per_loop > 1, the whole device loop).",
           mechanism="XLA: xla.compile of the step (mix_compile_mode=False; with iterations_per_loop > 1 each "
                     "step inside TensorFlow's loop on a CPU, the whole device loop on a GPU, "
                     "NPURUN_XLA_DEVICE_LOOP=step/loop overrides: a CPU whole loop runs convolution gradients as "
                     f"generic loops, measured {CPU_CONV_LOOP_SLOWDOWN:.0f}x slower, and warns) or auto-clustering (global_jit_level ON_1, "
                     "mix_compile_mode=True); 'false': global_jit_level OFF"),
    Option("hcom_parallel", False, boolean(), EFFECT, nullable=False, codec=_b("hcom_parallel"),
           rule="True or False",
           doc="Overlap gradient all-reduce with the backward pass.",
           mechanism="per-gradient collective all-reduce instead of one grouped all-reduce"),
    Option("graph_memory_max_size", None, _memory, EFFECT, codec=_memory_codec("graph_memory_max_size"),
           gpu_only=True,
           rule=f"an int or numeric string of bytes (or a product, '21*1024*1024*1024') in [0, {MEMORY_LIMIT}]; None means 26 GB",
           doc="Graph memory limit (with variable_memory_max_size: the device memory TensorFlow may take).",
           mechanism="GPU memory cap: one virtual device per GPU with memory_limit = graph + variable sizes"),
    Option("variable_memory_max_size", None, _memory, EFFECT, codec=_memory_codec("variable_memory_max_size"),
           gpu_only=True,
           rule=f"an int or numeric string of bytes (or a product, '21*1024*1024*1024') in [0, {MEMORY_LIMIT}]; None means 5 GB",
           doc="Variable memory limit.",
           mechanism="added to graph_memory_max_size for the GPU memory cap"),
    # '' is "no tuning", as on Ascend: the launch scripts export FLAG_AUTOTUNE="" and their scripts pass
    # os.getenv("FLAG_AUTOTUNE") to the session config's auto_tune_mode (5 ModelZoo folders).
    Option("auto_tune_mode", None,
           parsed(lambda v: () if v == "" else parsers.parse_comma_list(v, allowed=("GA", "RL")),
                  "a comma list of GA, RL, or '' (no tuning)"),
           EFFECT, codec=_s("auto_tune_mode"), gpu_only=True,
           rule="a comma list of GA, RL, '' (no tuning), or None",
           doc="Kernel auto-tuning.",
           mechanism="GPU: cuDNN autotuning and XLA --xla_gpu_autotune_level=4"),
    Option("stream_max_parallel_num", None,
           parsed(parsers.parse_stream_parallel, "'ENGINE:N[,ENGINE:N]' with ENGINE DNN_VM_TF or DNN_V100, N in [1, 13]"),
           EFFECT, codec=_s("stream_max_parallel_num"),
           rule="'ENGINE:N[,ENGINE:N]', engines DNN_VM_TF (AI CPU) and DNN_V100 (AI Core), N in [1, 13]",
           doc="Parallelism of the host-op and compute engines.",
           mechanism="DNN_VM_TF -> inter-op thread pool of N threads; DNN_V100 -> N GPU kernel-launch threads "
                     "(TF_GPU_THREAD_MODE=gpu_private, TF_GPU_THREAD_COUNT)"),
    Option("is_tailing_optimization", False, boolean(), EFFECT, nullable=False,
           codec=_b("is_tailing_optimization"),
           rule="True or False; must equal NPUOptimizer's is_tailing_optimization",
           doc="Distributed loss scaling: overlap the overflow check with the last all-reduce.",
           mechanism="overflow status all-reduced with the last gradient bucket"),
    Option("horovod_mode", False, boolean(), NOT_SUPPORTED, nullable=False, codec=_b("horovod_mode"),
           rule="True or False", doc="Not supported in the current version (product document).",
           mechanism="none"),
    Option("graph_run_mode", 1, integer(choices=(0, 1)), EFFECT, nullable=False, codec=_i("graph_run_mode"),
           rule="0 (inference) or 1 (training)",
           doc="Graph execution mode: 0 for online inference, 1 for training.",
           mechanism="0 rejects train() with a ValueError"),
    Option("op_debug_level", 0, integer(lo=0, hi=4), EFFECT, nullable=False, codec=_i("op_debug_level"),
           rule="an int in [0, 4]",
           doc="Kernel debug artefacts under <debug_dir>/kernel_meta.",
           mechanism="XLA dump flags (HLO with source mapping, LLVM IR, object code; 2: unoptimised) when XLA "
                     "compiles; built and executed GraphDefs"),
    Option("enable_scope_fusion_passes", None, parsed(parsers.parse_comma_list, "a comma list of pass names"),
           EFFECT, codec=_s("enable_scope_fusion_passes"),
           rule="a comma list of scope fusion pass names, or None",
           doc="Non-general scope fusion passes to enable.",
           mechanism="passes with a grappler equivalent switch it on; the others are reported"),
    Option("distribute", None, instance_of("ParameterServerStrategy", _is_ps_strategy), EFFECT,
           rule="a ParameterServerStrategy, only together with a TF_CONFIG cluster; or None",
           doc="Parameter-server training strategy.",
           mechanism="TensorFlow's parameter-server runtime over gRPC"),
    Option("enable_exception_dump", 0, integer(choices=(0, 1, 2)), EFFECT, nullable=False,
           codec=_i("enable_exception_dump"),
           rule="0, 1 or 2",
           doc="On an operator error, dump the failing op's inputs and outputs to the current directory.",
           mechanism="the failing op's identity, error text and recomputable inputs written as .npy"),
    Option("op_select_implmode", None, choice(*IMPL_MODES), EFFECT, codec=_s("op_select_implmode"),
           rule="high_precision or high_performance; None means high_performance",
           doc="High-precision or high-performance operator implementations.",
           mechanism="high_precision keeps ops in fp32 under low-precision modes and turns TF32 off"),
    Option("optypelist_for_implmode", None, parsed(parsers.parse_comma_list, "a comma list of op types"), EFFECT,
           codec=_s("optypelist_for_implmode"),
           rule="a comma list of op types (e.g. Pooling, SoftmaxV2, LRN, ROIAlign); needs op_select_implmode",
           doc="The op types that op_select_implmode applies to.",
           mechanism="those op types follow op_select_implmode"),
    Option("dynamic_input_config", None, anything(), NOT_SUPPORTED, codec=_s("dynamic_input_config"),
           rule="any value", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("aoe_mode", None, anything(), NOT_SUPPORTED, codec=_s("aoe_mode"),
           rule="any value", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("work_path", None, anything(), NOT_SUPPORTED, codec=_s("work_path"),
           rule="any value", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("distribute_config", None, anything(), NOT_SUPPORTED, codec=_s("distribute_config"),
           rule="any value", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("buffer_optimize", None, choice("l2_optimize", "off_optimize"), NOT_SUPPORTED,
           codec=_s("buffer_optimize"),
           rule="l2_optimize or off_optimize", doc="Not supported in the current version (product document).",
           mechanism="none"),
    Option("enable_small_channel", 0, integer(choices=(0, 1)), NOT_SUPPORTED, nullable=False,
           codec=_i("enable_small_channel"),
           rule="0 or 1", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("fusion_switch_file", None,
           existing_file(parsers.parse_fusion_switch, path_rule=parsers.check_path_chars, what="fusion switch file"),
           EFFECT, codec=_s("fusion_switch_file"),
           rule="path of a JSON fusion switch file (letters, digits, _ - . and CJK characters)",
           doc="Switch graph fusion (GraphFusion) and kernel fusion (UBFusion) passes on or off.",
           mechanism="GraphFusion -> grappler optimizer switches; UBFusion -> XLA passes disabled "
                     "(--xla_disable_hlo_passes)"),
    Option("enable_compress_weight", False, boolean(), NOT_SUPPORTED, nullable=False,
           codec=_b("enable_compress_weight"),
           rule="True or False", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("compress_weight_conf", None, anything(), NOT_SUPPORTED, codec=_s("compress_weight_conf"),
           rule="any value", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("op_compiler_cache_mode", "disable", choice("enable", "disable", "force"), EFFECT, nullable=False,
           codec=_s("op_compiler_cache_mode"),
           rule="enable, disable or force; caching only with op_debug_level 0 or 3",
           doc="Persistent kernel compilation cache.",
           mechanism="XLA persistent compilation cache in <op_compiler_cache_dir>/kernel_cache; force empties it"),
    Option("op_compiler_cache_dir", None, directory(parsers.check_path_chars), EFFECT,
           codec=_s("op_compiler_cache_dir"),
           rule="a directory path (letters, digits, _ - . and CJK characters); None means $HOME/atc_data",
           doc="Directory of the compilation cache (kernel_cache is created inside it).",
           mechanism="parent of the XLA persistent cache directory"),
    Option("debug_dir", None, directory(), EFFECT, codec=_s("debug_dir"),
           rule="a directory path or None (the current directory)",
           doc="Where kernel_meta debug artefacts are written.",
           mechanism="parent of kernel_meta"),
    Option("dynamic_input", False, boolean(), EFFECT, nullable=False, codec=_b("dynamic_input"),
           rule="True or False",
           doc="Whether the network's inputs have dynamic shapes.",
           mechanism="inputs get the shapes of dynamic_inputs_shape_range, checked at run time"),
    Option("dynamic_graph_execute_mode", "dynamic_execute", choice("dynamic_execute", "lazy_recompile"), EFFECT,
           nullable=False, codec=_s("dynamic_graph_execute_mode"),
           rule="dynamic_execute or lazy_recompile (lazy_recompile needs iterations_per_loop=1)",
           doc="Execution mode for dynamic inputs (with dynamic_input=True).",
           mechanism="whole-step XLA: dynamic_execute pads ranged inputs to their upper bounds as XLA bounded "
                     "dynamic dimensions (XlaSetDynamicDimensionSize), one compilation for the range; "
                     "lazy_recompile compiles once per distinct input shape. Mixed XLA compiles per shape, and "
                     "without XLA one TensorFlow graph runs every shape (a warning says so)"),
    Option("dynamic_inputs_shape_range", None,
           parsed(parsers.parse_shape_ranges, "'getnext:[d,...],[...];data:[...]' with d an int, lo~hi or -1"),
           EFFECT, codec=_s("dynamic_inputs_shape_range"),
           rule="'getnext:[d,...],...;data:[...]', d an int, lo~hi or -1, [] for scalars",
           doc="Shape ranges of the dataset (getnext) and placeholder (data) inputs.",
           mechanism="fixed dims made static on dataset (getnext) and placeholder (data) inputs; a size out of "
                     "range is an error naming input, dimension, size and range"),
    Option("local_rank_id", None, integer(lo=0, hi=7), EFFECT, codec=_i("local_rank_id"),
           rule="an int in [0, 7] or None",
           doc="Rank of the process that preprocesses input for the devices of its host.",
           mechanism="tf.data service: that rank's process runs the input pipeline once and deals its batches "
                     "round-robin to the ranks of local_device_list (coordinated reads)"),
    Option("local_device_list", None, parsed(parsers.parse_device_list, "comma-separated device ids in [0, 7]"),
           EFFECT, codec=_s("local_device_list"),
           rule="comma-separated device ids in [0, 7], e.g. '0,1'; needs local_rank_id",
           doc="The devices the preprocessing rank sends input to.",
           mechanism="see local_rank_id"),
    Option("session_device_id", None, integer(lo=0), EFFECT, codec=_i("session_device_id"),
           rule="an int >= 0 or None; wins over ASCEND_DEVICE_ID",
           doc="Logical id of the device this session's graph runs on.",
           mechanism="GPU index of the session (visible_device_list); on a CPU-only machine only 0"),
    Option("modify_mixlist", None, existing_file(parsers.parse_mixlist, what="JSON mixed-precision list file"),
           EFFECT, codec=_s("modify_mixlist"),
           rule="path of a JSON file editing black-list / white-list / gray-list; only with a mixed precision mode",
           doc="Edit the mixed-precision op lists.",
           mechanism="grappler auto mixed precision allow/deny/infer lists"),
    Option("op_precision_mode", None, existing_file(parsers.parse_op_precision_ini, what="op precision ini file"), EFFECT,
           codec=_s("op_precision_mode"),
           rule="path of an ini file of OpType=high_precision|high_performance; wins over op_select_implmode",
           doc="Per-op-type precision choice.",
           mechanism="high_precision op types stay fp32 under low-precision modes"),
    Option("customize_dtypes", None, text(path=True), NO_EFFECT, codec=_s("customize_dtypes"),
           rule="a path (of a file of per-op dtype lines) or None; not opened here, so it need not exist",
           doc="Per-operator input/output dtypes for the Ascend graph engine.",
           mechanism="the file is read only by the Ascend graph engine (CANN), which TensorFlow here does not "
                     "have; op dtypes follow precision_mode"),
    Option("device_type", "default", anything(), NOT_SUPPORTED, nullable=False, codec=_s("device_type"),
           rule="any value", doc="Not supported in the current version (product document).", mechanism="none"),
    Option("hccl_timeout", None, integer(lo=1, hi=TIMEOUT_SECONDS_MAX, why="its milliseconds must fit an int64"), EFFECT, codec=_i("hccl_timeout"),
           rule="an int of seconds > 0, or None",
           doc="Timeout of collective operations.",
           mechanism="run deadline of a collective rank's sessions (ConfigProto.operation_timeout_in_ms = "
                     "hccl_timeout x iterations_per_loop, unless op_wait_timeout is set): a dead peer is an "
                     "error after this long; not a per-op timeout, which costs TensorFlow 2 threads per op run"),
    Option("op_wait_timeout", None, integer(lo=1, hi=TIMEOUT_SECONDS_MAX, why="its milliseconds must fit an int64"), EFFECT, codec=_i("op_wait_timeout"),
           rule="an int of seconds > 0, or None",
           doc="Timeout for blocking operations.",
           mechanism="ConfigProto.operation_timeout_in_ms"),
    Option("op_execute_timeout", None, integer(lo=1, hi=TIMEOUT_SECONDS_MAX, why="its milliseconds must fit an int64"), NOT_SUPPORTED, codec=_i("op_execute_timeout"),
           rule="an int of seconds > 0, or None",
           doc="Not supported in the current version (product document).", mechanism="none"),
)

OPTIONS = MappingProxyType({option.name: option for option in _OPTIONS})
"""Every NPURunConfig option by name, in the product document's order."""
