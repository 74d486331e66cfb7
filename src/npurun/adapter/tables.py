"""The coverage table of the Ascend adapters: every public name of `npu_bridge`, `hccl` and `npu_device` (the
TF 2 package, whose table is `npu_device/coverage.py`) that scripts use, and what it is here (`Mapped`, `NoEffect` or `Unsupported`: see `npurun.names.coverage`).

`npurun.adapter.finder` builds the `npu_bridge...` / `hccl...` modules from `MODULES` while the
compatibility layer is active; docs/compat.md is rendered from it (`npurun.tools.compat_docs`).
Plain data: nothing here imports TensorFlow.
"""
from __future__ import annotations

from typing import Mapping

from ..names.coverage import (ADAPTER_ROOTS, AdapterAPIError, AdapterModule, Entry, Mapped, NoEffect,  # noqa: F401
                              Unsupported, availability, describe, is_adapter_module, resolve, split_target)
from ..tf1.table import LAYERS_NAMESPACE, TF_LAYERS  # noqa: F401
from ..tf_estimator.table import ESTIMATOR_NAMESPACE, TF_ESTIMATOR  # noqa: F401

# ---- the table -------------------------------------------------------------------------------------
_DIST = "npurun.distribute"
_EST = "npurun.estimator"
_PREC = "npurun.precision"
_SHIMS = "npurun.adapter.shims"
_KERAS_CALLBACKS = "npurun.adapter.keras_callbacks"
_OPS = "npurun.adapter.npu_ops"

_NO_NPU_SYSTEM = ("there is no NPU system to open or close on a CPU/GPU; the op it returns is a no-op")
_NOT_KERAS3 = ("TF 2.21 ships Keras 3, which has no TF1 backend session or OptimizerV2 hooks to patch; "
               "use NPUEstimator, or tf.compat.v1 optimizers with npu_distributed_optimizer_wrapper")
_NPU_KERNEL = ("a fused Ascend kernel with no CPU/GPU kernel here; the adapter publishes only its signature, not "
               "its exact computation, so a rewrite could differ silently: write it with TensorFlow ops")
_GRAPH_ENGINE = ("the attributes it sets are read only by the Ascend graph engine; results are the same without "
                 "them, so the block runs as written")
_KERNEL_LIBRARY = "Ascend AI CPU / custom kernels of the adapter with no CPU/GPU implementation here"
_P2P = ("point-to-point and remote-memory HCCL operations between NPU devices have no counterpart in "
        "npurun's collectives (allreduce, broadcast, allgather, reduce_scatter, reduce)")

NPU_CONFIG = {
    "NPURunConfig": Mapped("npurun.config:NPURunConfig"),
    "ProfilingConfig": Mapped("npurun.config:ProfilingConfig"),
    "DumpConfig": Mapped("npurun.config:DumpConfig"),
    "DynamicInputConfig": Unsupported(
        "it feeds the dynamic_input_config option, which the product document marks as not supported; "
        "use NPURunConfig(dynamic_input=..., dynamic_graph_execute_mode=..., dynamic_inputs_shape_range=...)"),
    "NpuExecutePlacement": Mapped(f"{_SHIMS}:NpuExecutePlacement",
                                  "the enum of placements npu_variable_scope takes (accepted there with no effect)"),
    "MemoryConfig": NoEffect(f"{_SHIMS}:MemoryConfig",
                             "NPU memory policies (atomic clean, static memory, 1G huge pages) have no CPU/GPU "
                             "counterpart; NPURunConfig takes no memory_config"),
    "decorator_tf_session": NoEffect(f"{_SHIMS}:decorator_tf_session",
                                     "it adds the adapter's default NPU session config; here tf.compat.v1.Session "
                                     "reads NpuOptimizer entries itself, so the function is returned unchanged"),
}
NPU_ESTIMATOR = {
    "NPUEstimator": Mapped(f"{_EST}:NPUEstimator"),
    "NPUEstimatorSpec": Mapped(f"{_EST}:NPUEstimatorSpec"),
}
NPU_OPTIMIZER = {
    "NPUOptimizer": Mapped(f"{_PREC}:NPUOptimizer"),
    "NPUDistributedOptimizer": Mapped(f"{_DIST}:NPUDistributedOptimizer"),
    "npu_distributed_optimizer_wrapper": Mapped(f"{_DIST}:npu_distributed_optimizer_wrapper"),
    "allreduce": Mapped(f"{_SHIMS}:optimizer_allreduce",
                        "allreduce(tensor, average=True): sum over ranks with npurun.distribute.allreduce, "
                        "divided by get_rank_size() when average"),
    "npu_allreduce": Mapped(f"{_DIST}:npu_allreduce"),
    "KerasDistributeOptimizer": Mapped(f"{_SHIMS}:npu_keras_optimizer",
                                       "one rank: the optimizer itself; several: tf.compat.v1 optimizers get "
                                       "NPUDistributedOptimizer, a Keras 3 optimizer raises AdapterAPIError"),
}
NPU_LOSS_SCALE_OPTIMIZER = {
    "NPULossScaleOptimizer": Mapped(f"{_PREC}:NPULossScaleOptimizer"),
    # the adapter's module imports its manager at the top, so scripts import it from here too (subpixel)
    "FixedLossScaleManager": Mapped(f"{_PREC}:FixedLossScaleManager"),
}
NPU_LOSS_SCALE_MANAGER = {
    "FixedLossScaleManager": Mapped(f"{_PREC}:FixedLossScaleManager"),
    "ExponentialUpdateLossScaleManager": Mapped(f"{_PREC}:ExponentialUpdateLossScaleManager"),
}
NPU_HOOK = {
    "NPUBroadcastGlobalVariablesHook": Mapped(f"{_DIST}:NPUBroadcastGlobalVariablesHook"),
    "broadcast_global_variables": Mapped(f"{_DIST}:broadcast_global_variables"),
    "NPUCheckpointSaverHook": Mapped("tensorflow.compat.v1.train:CheckpointSaverHook",
                                     "the adapter's subclass only adds a log line"),
    "NPUOutputTensorHook": Mapped(f"{_SHIMS}:NPUOutputTensorHook",
                                  "collects the tensors every step and calls output_fn every N steps and at the end"),
    "SetIterationsVarHook": NoEffect(f"{_SHIMS}:SetIterationsVarHook",
                                     "it loads the Ascend device loop's iteration variables; here the loop count "
                                     "comes from iterations_per_loop / util.set_iteration_per_loop"),
    "TellMeStepOrLossHook": NoEffect(f"{_SHIMS}:TellMeStepOrLossHook",
                                     "it reports step/loss to the Ascend runtime's inner checks, which do not exist "
                                     "here"),
}
UTIL = {
    "set_iteration_per_loop": Mapped("npurun.util:set_iteration_per_loop"),
    "IterationPerLoop": Mapped("npurun.util:IterationPerLoop"),
    "variable_initializer_in_host": Mapped(f"{_SHIMS}:variable_initializer_in_host",
                                           "tf.compat.v1.variables_initializer (host and device are one here)"),
    "npu_compile": Mapped(f"{_SHIMS}:npu_compile", "runs the fetches once, as the adapter does"),
    "global_dict_init": Mapped(f"{_SHIMS}:global_dict_init"),
    "set_value": Mapped(f"{_SHIMS}:set_value"),
    "get_value": Mapped(f"{_SHIMS}:get_value"),
    "set_graph_exec_config": NoEffect(
        f"{_SHIMS}:set_graph_exec_config",
        "returns the fetch unchanged: its dynamic-shape attributes are read only by the Ascend graph engine (set "
        "dynamic_input, dynamic_graph_execute_mode and dynamic_inputs_shape_range on NPURunConfig instead)"),
}
NPU_OPS = {
    "dropout": Mapped(f"{_OPS}:dropout", "inverted dropout with keep_prob (tf.nn.dropout semantics)"),
    "initialize_system": NoEffect(f"{_OPS}:initialize_system", _NO_NPU_SYSTEM),
    "shutdown_system": NoEffect(f"{_OPS}:shutdown_system", _NO_NPU_SYSTEM),
    "NPUInit": NoEffect(f"{_OPS}:initialize_system", _NO_NPU_SYSTEM),
    "NPUShutdown": NoEffect(f"{_OPS}:shutdown_system", _NO_NPU_SYSTEM),
    "LARS": Unsupported(_NPU_KERNEL),
    "LARSV2": Unsupported(_NPU_KERNEL),
    "basic_lstm_cell": Unsupported(_NPU_KERNEL + " (e.g. tf.compat.v1.nn.rnn_cell.BasicLSTMCell)"),
    "adam_apply_one_assign": Unsupported(_NPU_KERNEL),
    "adam_apply_one_with_decay_assign": Unsupported(_NPU_KERNEL),
    "outfeed_enqueue_op": Unsupported("NPU outfeed channels do not exist here; fetch tensors with Session.run "
                                      "or a SessionRunHook"),
    "outfeed_dequeue_op": Unsupported("NPU outfeed channels do not exist here; fetch tensors with Session.run "
                                      "or a SessionRunHook"),
    "stop_outfeed_dequeue_op": Unsupported("NPU outfeed channels do not exist here"),
}
# `npu_bridge.npu_cpu.npu_cpu_ops`: the adapter's AI CPU kernels. Scripts use two (5 ModelZoo folders).
NPU_CPU_OPS = {
    "randomchoicewithmask": Mapped(f"{_OPS}:randomchoicewithmask",
                                   "up to `count` true elements of a bool tensor, at random: int32 [count, rank] "
                                   "indices zero-padded and a bool [count] mask of the real rows (TensorFlow's "
                                   "RandomShuffle of tf.where(x) with the same seed/seed2)"),
    "embeddingrankid": Unsupported(_KERNEL_LIBRARY + " (rank ids of a host embedding table's addresses)"),
}
HCCL_OPS = {
    "allreduce": Mapped(f"{_DIST}:allreduce"),
    "broadcast": Mapped(f"{_DIST}:broadcast"),
    "allgather": Mapped(f"{_DIST}:allgather"),
    "reduce_scatter": Mapped(f"{_DIST}:reduce_scatter"),
    "reduce": Mapped(f"{_DIST}.collectives:reduce"),
    "send": Unsupported(_P2P),
    "receive": Unsupported(_P2P),
    "remote_read": Unsupported(_P2P),
    "remote_ref_read": Unsupported(_P2P),
    "remote_write": Unsupported(_P2P),
    "remote_scatter_write": Unsupported(_P2P),
    "all_to_all_v": Unsupported(_P2P),
    "all_to_all_v_c": Unsupported(_P2P),
    "gather_all_to_all_v": Unsupported(_P2P),
}
HCCL_MANAGE_API = {
    "get_rank_id": Mapped(f"{_DIST}:get_rank_id"),
    "get_rank_size": Mapped(f"{_DIST}:get_rank_size"),
    "get_local_rank_id": Mapped(f"{_DIST}:get_local_rank_id"),
    "get_local_rank_size": Mapped(f"{_DIST}:get_local_rank_size"),
    "create_group": Mapped(f"{_DIST}:create_group"),
    "destroy_group": Mapped(f"{_DIST}:destroy_group"),
    "get_world_rank_from_group_rank": Mapped(f"{_DIST}:get_world_rank_from_group_rank"),
    "get_group_rank_from_world_rank": Mapped(f"{_DIST}:get_group_rank_from_world_rank"),
}
_SPLIT_WHY = ("a hint for how HCCL packs gradient all-reduces; here TensorFlow's collectives decide the "
              "packing (hcom_parallel controls overlap with the backward pass)")
HCCL_SPLIT_API = {
    "set_split_strategy_by_idx": NoEffect(f"{_SHIMS}:set_split_strategy_by_idx", _SPLIT_WHY),
    "set_split_strategy_by_size": NoEffect(f"{_SHIMS}:set_split_strategy_by_size", _SPLIT_WHY),
}
NPU_SCOPE = {
    "without_npu_compile_scope": NoEffect(
        f"{_SHIMS}:without_npu_compile_scope",
        "nothing is compiled for an NPU here, so there is nothing to keep out; the block runs as written"),
    "keep_dtype_scope": Unsupported("npurun.precision has no per-scope keep-dtype; keep op types in fp32 "
                                    "with NPURunConfig(modify_mixlist=...) instead"),
    "NpuExecutePlacement": Mapped(f"{_SHIMS}:NpuExecutePlacement"),
    **{scope: NoEffect(f"{_SHIMS}:graph_engine_scope", _GRAPH_ENGINE) for scope in (
        "npu_variable_scope", "npu_stage_scope", "npu_mem_type_scope", "npu_weight_prefetch_scope",
        "op_specified_engine_scope", "npu_qos_label_scope", "subgraph_multi_dims_scope", "npu_optimizer_scope",
        "disable_autofuse", "limit_core_num_scope")},
}
NPU_RNN = {
    "npu_dynamic_rnn": Mapped(f"{_SHIMS}:npu_dynamic_rnn",
                              "the cell over time-major inputs, unrolled with tf.compat.v1.nn.static_rnn (as the "
                              "adapter does)"),
}
_DYNAMIC_RNN = "npurun.adapter.npu_dynamic_rnn"
NPU_DYNAMIC_RNN = {
    "DynamicRNN": Mapped(f"{_DYNAMIC_RNN}:DynamicRNN",
                         "the fused LSTM as a tf.scan over time: same variables (one [input+hidden, 4*hidden] "
                         "weight, gates i, j, f, o), same 8 time-major outputs; forward, reverse and bidirectional"),
    "DynamicGRUV2": Mapped(f"{_DYNAMIC_RNN}:DynamicGRUV2",
                           "the fused GRU (reset after the hidden product) as a tf.scan over time: same variables "
                           "and 6 time-major outputs"),
    "DynamicAUGRU": Unsupported("the attention-update GRU kernel is not written here yet (2 ModelZoo folders, "
                                "DIEN); its gate formula is not checked against the kernel"),
}
_UNSUPPORTED_MODULES = {
    "keras_to_npu": Unsupported(_NOT_KERAS3),
}
_STRATEGY = "npurun.adapter.npu_strategy"
NPU_STRATEGY = {
    "NPUStrategy": Mapped(f"{_STRATEGY}:NPUStrategy",
                          "TensorFlow's one-device strategy on this rank's training device (the adapter's default "
                          "\"/cpu:0\" is its host; the model trains on the NPU there, on the GPU or CPU here), "
                          "num_replicas_in_sync = the rank count, a distributed dataset sharded by rank; gradients "
                          "are summed by NPUDistributedOptimizer, as on Ascend"),
    "NPUExtended": Mapped(f"{_STRATEGY}:NPUExtended"),
}
NPU_UNARY_OPS = {
    "gelu": Mapped(f"{_OPS}:gelu", "tanh approximation, written with TensorFlow ops (TensorFlow differentiates it)"),
    "gelu_grad": Mapped(f"{_OPS}:gelu_grad"),
}
NPU_PLUGIN = {
    "npu_resource_init": NoEffect(f"{_SHIMS}:npu_resource_init", "there is no NPU device to open on a CPU/GPU"),
    # Releasing nothing is all a clean-up call has to do here: mapped, so scripts' last line warns of nothing.
    "npu_resource_shutdown": Mapped(f"{_SHIMS}:npu_resource_shutdown", "there are no NPU resources to release"),
    "npu_close": Mapped(f"{_SHIMS}:npu_close", "there are no NPU resources to release"),
    **{name: Unsupported("RDMA pools and shared device memory of Ascend hosts have no CPU/GPU counterpart")
       for name in ("init_rdma_pool", "rdma_remote_register", "rdma_remote_init", "get_var_addr_and_size",
                    "malloc_shared_memory", "get_rdma_cache")},
    "set_device_sat_mode": Unsupported("the NPU's saturation mode for float overflow has no CPU/GPU counterpart"),
}

# What `from npu_bridge.npu_init import *` brings in: every public name of the adapter's npu_init
# (it has no __all__), over its versions, including the modules it imports (`os`, `tf`, ...).
NPU_INIT = {
    "os": Mapped("os", "the standard library module (npu_init imports it)"),
    "tf": Mapped(f"{_SHIMS}:script_tensorflow",
                 "the `tensorflow` module a script imports, looked up when first read: TensorFlow 1's API as on "
                 "Ascend (npurun's TF1 world when it is on, else tf.compat.v1)"),
    **{n: NPU_CONFIG[n] for n in ("NPURunConfig", "ProfilingConfig", "MemoryConfig", "DumpConfig",
                                  "DynamicInputConfig", "decorator_tf_session")},
    **NPU_ESTIMATOR,
    **{n: NPU_HOOK[n] for n in ("NPUCheckpointSaverHook", "NPUOutputTensorHook", "NPUBroadcastGlobalVariablesHook",
                                "SetIterationsVarHook", "TellMeStepOrLossHook")},
    **{n: NPU_OPTIMIZER[n] for n in ("NPUDistributedOptimizer", "KerasDistributeOptimizer",
                                     "npu_distributed_optimizer_wrapper", "NPUOptimizer", "npu_allreduce")},
    **NPU_LOSS_SCALE_OPTIMIZER,
    **NPU_LOSS_SCALE_MANAGER,
    "NPUBroadcastGlobalVariablesCallback": Mapped(f"{_KERAS_CALLBACKS}:NPUBroadcastGlobalVariablesCallback",
                                                  "a tf-keras callback (tf.keras under npurun run): before the "
                                                  "first batch, the variables of Keras's session from root_rank"),
    "npu_ops": Mapped("npu_bridge.estimator.npu_ops"),
    "util": Mapped("npu_bridge.estimator.npu.util"),
    "npu_scope": Mapped("npu_bridge.estimator.npu.npu_scope"),
    "npu_plugin": Mapped("npu_bridge.estimator.npu.npu_plugin"),
    "npu_rnn": Mapped("npu_bridge.estimator.npu.npu_rnn"),
    "npu_unary_ops": Mapped("npu_bridge.estimator.npu_unary_ops.npu_unary_ops"),
    "hccl_ops": Mapped("npu_bridge.hccl.hccl_ops"),
    "npu_strategy": Mapped("npu_bridge.estimator.npu.npu_strategy"),
    **_UNSUPPORTED_MODULES,
    "profiler": Unsupported("the CANN profiler; use ProfilingConfig (NPURunConfig(profiling_config=...))"),
    "npu_cpu_ops": Mapped("npu_bridge.npu_cpu.npu_cpu_ops"),
    "scoped_graph_manager": Unsupported("scoped graphs of the Ascend graph engine have no CPU/GPU counterpart"),
    "session_run_hook": Mapped("tensorflow.python.training.session_run_hook"),
    "backend": Mapped("tf_keras.src.backend", "the backend of tf-keras, the Keras a script's tf.keras is under "
                                              "npurun run (npu_init re-exports tensorflow.python.keras.backend)"),
    "experimental_options": Mapped(f"{_SHIMS}:experimental_options",
                                   "the adapter's dict of Grappler passes it keeps on"),
    "config_pb2": Mapped("tensorflow.core.protobuf.config_pb2"),
    "rewriter_config_pb2": Mapped("tensorflow.core.protobuf.rewriter_config_pb2"),
    "RewriterConfig": Mapped("tensorflow.core.protobuf.rewriter_config_pb2:RewriterConfig",
                             "TensorFlow's own; an NpuOptimizer entry in custom_optimizers is read as NPURunConfig "
                             "options by NPURunConfig(session_config=...) and by tf.compat.v1.Session under npurun run"),
    "session": Mapped("tensorflow.python.client.session"),
    **HCCL_MANAGE_API,
    **HCCL_SPLIT_API,
    "npu_close": Mapped(f"{_SHIMS}:npu_close", "there are no NPU resources to release"),
    "npu_config_proto": Mapped(f"{_SHIMS}:npu_config_proto",
                               "allow_soft_placement on; the remapper/XLA switches the adapter turns off for its "
                               "graph engine are left to TensorFlow and NPURunConfig"),
    "npu_session_config_init": Mapped(f"{_SHIMS}:npu_session_config_init",
                                      "as npu_config_proto, plus an NpuOptimizer entry for NPURunConfig to read"),
    "npu_run_config_init": Mapped(f"{_SHIMS}:npu_run_config_init",
                                  "the run config (tf.estimator.RunConfig() if none) with that session config"),
    "npu_hooks_append": Mapped(f"{_SHIMS}:npu_hooks_append",
                               "appends NPUBroadcastGlobalVariablesHook(0, RANK_ID)"),
    "npu_callbacks_append": Mapped(f"{_KERAS_CALLBACKS}:npu_callbacks_append",
                                   "appends NPUBroadcastGlobalVariablesCallback(0)"),
    "npu_clear_session": Mapped(f"{_SHIMS}:npu_clear_session", "tf.keras's clear_session(), then a new session "
                                "with npu_session_config_init(config) as tf.keras's session (tf-keras)"),
    "NpuEmptyHook": Mapped(f"{_SHIMS}:NpuEmptyHook", "a SessionRunHook that does nothing"),
    "npu_tf_optimizer": Mapped(f"{_SHIMS}:npu_tf_optimizer", "NPUDistributedOptimizer(opt)"),
    "npu_keras_optimizer": Mapped(f"{_SHIMS}:npu_keras_optimizer",
                                  "one rank: the optimizer itself; several: tf.compat.v1 optimizers get "
                                  "NPUDistributedOptimizer, a Keras 3 optimizer raises AdapterAPIError"),
    "npu_graph_options": NoEffect(f"{_SHIMS}:npu_graph_options",
                                  "it turns XLA off for the Ascend graph engine; here XLA follows NPURunConfig"),
    "npu_optimizer_options": NoEffect(f"{_SHIMS}:npu_optimizer_options",
                                      "it turns XLA off for the Ascend graph engine; here XLA follows NPURunConfig"),
    "set_keras_session_npu_config": Mapped(f"{_SHIMS}:set_keras_session_npu_config",
                                           "a tf.compat.v1.Session with npu_session_config_init(config) (an "
                                           "NPUSession), set as tf.keras's session (tf-keras, as under npurun run)"),
    "init_resource": Mapped(f"{_SHIMS}:init_resource",
                            "a tf.compat.v1.Session and a no-op shutdown op; records the rank ids"),
    "shutdown_resource": Mapped(f"{_SHIMS}:shutdown_resource"),
    "close_session": Mapped(f"{_SHIMS}:close_session"),
    "get_npu_rank_id": Mapped(f"{_SHIMS}:get_npu_rank_id", "the rank id init_resource recorded (default 0)"),
    "get_npu_local_rank_id": Mapped(f"{_SHIMS}:get_npu_local_rank_id", "as recorded by init_resource (default 0)"),
    "get_npu_rank_size": Mapped(f"{_SHIMS}:get_npu_rank_size", "as recorded by init_resource (default 1)"),
    "get_npu_local_rank_size": Mapped(f"{_SHIMS}:get_npu_local_rank_size",
                                      "as recorded by init_resource (default 1)"),
}


def _package(name: str, doc: str, *children: str, unsupported: Mapping[str, Entry] = None) -> AdapterModule:
    names = {child: Mapped(f"{name}.{child}") for child in children}
    names.update(unsupported or {})
    return AdapterModule(name, doc, names, package=True)


MODULES: dict[str, AdapterModule] = {m.name: m for m in (
    _package("npu_bridge", "The adapter's top-level package.", "npu_init", "estimator", "hccl", "npu_cpu"),
    _package("npu_bridge.npu_cpu", "The adapter's AI CPU kernels.", "npu_cpu_ops",
             unsupported={"lrucache_cpu_ops": Unsupported(_KERNEL_LIBRARY + " (a host LRU embedding cache)")}),
    AdapterModule("npu_bridge.npu_cpu.npu_cpu_ops", "AI CPU kernels (`from npu_bridge.npu_cpu import "
                  "npu_cpu_ops`).", NPU_CPU_OPS),
    AdapterModule("npu_bridge.npu_init", "What `from npu_bridge.npu_init import *` brings in.", NPU_INIT),
    _package("npu_bridge.estimator", "Estimator-side modules.", "npu", "npu_ops", "npu_unary_ops",
             unsupported={"npu_aicore_ops": Unsupported(_NPU_KERNEL)}),
    _package("npu_bridge.estimator.npu_unary_ops", "The module of the adapter's unary ops.", "npu_unary_ops"),
    AdapterModule("npu_bridge.estimator.npu_unary_ops.npu_unary_ops",
                  "Unary ops (`from npu_bridge.estimator.npu_unary_ops import npu_unary_ops`).", NPU_UNARY_OPS),
    _package("npu_bridge.estimator.npu", "Run config, estimator, optimizers, hooks and helpers.",
             "npu_config", "npu_estimator", "npu_optimizer", "npu_loss_scale_optimizer", "npu_loss_scale_manager",
             "npu_hook", "util", "npu_scope", "npu_plugin", "npu_rnn", "npu_dynamic_rnn", "npu_convert_dropout",
             "npu_strategy", unsupported={k: _UNSUPPORTED_MODULES[k] for k in ("keras_to_npu",)}),
    AdapterModule("npu_bridge.estimator.npu.npu_config", "Run configuration.", NPU_CONFIG),
    AdapterModule("npu_bridge.estimator.npu.npu_estimator", "The estimator.", NPU_ESTIMATOR),
    AdapterModule("npu_bridge.estimator.npu.npu_optimizer", "Optimizer wrappers.", NPU_OPTIMIZER),
    AdapterModule("npu_bridge.estimator.npu.npu_loss_scale_optimizer", "Loss scaling.", NPU_LOSS_SCALE_OPTIMIZER),
    AdapterModule("npu_bridge.estimator.npu.npu_loss_scale_manager", "Loss scale managers.", NPU_LOSS_SCALE_MANAGER),
    AdapterModule("npu_bridge.estimator.npu.npu_hook", "Session hooks.", NPU_HOOK),
    AdapterModule("npu_bridge.estimator.npu.util", "Loop sinking for sess.run scripts, and helpers.", UTIL),
    AdapterModule("npu_bridge.estimator.npu.npu_scope", "Graph scopes.", NPU_SCOPE),
    AdapterModule("npu_bridge.estimator.npu.npu_plugin", "NPU device resources.", NPU_PLUGIN),
    AdapterModule("npu_bridge.estimator.npu.npu_rnn", "RNN helpers.", NPU_RNN),
    AdapterModule("npu_bridge.estimator.npu.npu_strategy", "The tf.distribute strategy (4 ModelZoo folders: "
                  "SpineNet, XLNet, ASSEMBLED-CNN, Fixmatch).", NPU_STRATEGY),
    AdapterModule("npu_bridge.estimator.npu.npu_dynamic_rnn", "Fused RNN layers (10 ModelZoo folders: LSTM, "
                  "Siamese, GNMT, Tacotron2, CNN-CTC, ...).", NPU_DYNAMIC_RNN),
    AdapterModule("npu_bridge.estimator.npu.npu_convert_dropout",
                  "Imported for its side effect (15 ModelZoo folders): on Ascend it swaps tf.nn.dropout / "
                  "tf.layers.dropout for the NPU's dropout kernel, the same computation. Here importing it "
                  "changes nothing: TensorFlow's own dropout is the one that runs.", {}),
    AdapterModule("npu_bridge.estimator.npu_ops", "NPU operators.", NPU_OPS),
    _package("npu_bridge.hccl", "Collective communication.", "hccl_ops"),
    AdapterModule("npu_bridge.hccl.hccl_ops", "Collective operations.", HCCL_OPS),
    _package("hccl", "HCCL's Python package.", "manage", "split"),
    _package("hccl.manage", "Rank and group management.", "api"),
    AdapterModule("hccl.manage.api", "Rank and group management.", HCCL_MANAGE_API),
    _package("hccl.split", "Gradient split strategy.", "api"),
    AdapterModule("hccl.split.api", "Gradient split strategy.", HCCL_SPLIT_API),
)}


def _add_npu_device() -> None:
    """The TF 2 adapter's package, `npu_device` (its table: npurun.adapter.npu_device.coverage)."""
    import sys

    from .npu_device import coverage

    MODULES.update({module.name: module for module in coverage.modules(sys.modules[__name__])})


_add_npu_device()

ROOTS = ADAPTER_ROOTS

# What TensorFlow 2.21 gets while the layer is active (see npurun.adapter.tensorflow).
TF_NAMESPACES = {namespace.name: namespace for namespace in (ESTIMATOR_NAMESPACE, LAYERS_NAMESPACE)}


def lookup(adapter_name: str) -> Entry | None:
    """The entry for a dotted adapter name such as `npu_bridge.estimator.npu_ops.dropout`."""
    module, _, name = adapter_name.rpartition(".")
    table = MODULES.get(module)
    return table.names.get(name) if table else None


def unsupported_module(module_name: str) -> Unsupported | None:
    """The Unsupported entry for a module its parent package marks unsupported, else None."""
    entry = lookup(module_name)
    return entry if isinstance(entry, Unsupported) else None
