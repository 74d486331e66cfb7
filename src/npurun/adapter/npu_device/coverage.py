"""The coverage table of `npu_device` (the adapter's TensorFlow 2 package): every name ModelZoo's
TensorFlow2 scripts use, and what it is here (the statuses of the npu_bridge table).

Counts in the module docs are occurrences in ModelZoo-TensorFlow's `TensorFlow2/` Python files.
`modules(table)` builds the AdapterModule records from the table module's types (passed in, so
that this file imports nothing of the compatibility layer). No TensorFlow here.
"""
from __future__ import annotations

_HERE = "npurun.adapter.npu_device"
_KERNEL = ("a fused Ascend training kernel with no CPU/GPU kernel here; the adapter publishes only its "
           "signature, so a rewrite could differ silently: use the TensorFlow ops it fuses")
_GE_ONLY = "read only by the Ascend graph engine; the code runs the same without it"


def modules(t):
    """The npu_device modules, as `t.AdapterModule` records (t: the coverage table module)."""
    M, N, U = t.Mapped, t.NoEffect, t.Unsupported
    top = {
        "open": M(f"{_HERE}:open", "applies global_options() to TensorFlow 2's runtime and returns the device "
                                   "handle (name(), scope(), as_default(), workers_num, worker_id); several ranks "
                                   "join the collective group here"),
        "global_options": M(f"{_HERE}:global_options", "the adapter's NpuConfig, each attribute validated by "
                                                       "npurun's option table (docs/npu_device.md)"),
        "global_npu_ctx": M(f"{_HERE}:global_npu_ctx"),
        "gen_npu_ops": M("npu_device.gen_npu_ops"),
        "npu_compat_function": M(f"{_HERE}:npu_compat_function", "tf.function; jit_compile=True is dropped, as "
                                                                 "the adapter drops it"),
        "set_npu_loop_size": N(f"{_HERE}:set_npu_loop_size", "the NPU's loop count of a graph has no counterpart; "
                                                             "tf.function runs each call once"),
        "is_inf_nan_enabled": M(f"{_HERE}:is_inf_nan_enabled", "True: CPUs and GPUs compute with IEEE inf/NaN"),
        "set_device_sat_mode": U("the NPU's saturation mode for float overflow has no CPU/GPU counterpart"),
        "npu_run_context": U("run-context options (graph memory recompute) of the Ascend graph engine"),
        "keep_dtype_scope": U("npurun.precision has no per-scope keep-dtype; keep op types in fp32 with "
                              "global_options().modify_mixlist instead"),
        "npu_recompute_scope": U("recomputation scopes of the Ascend graph engine; use tf.recompute_grad"),
        "ops": M("npu_device.ops"), "distribute": M("npu_device.distribute"), "train": M("npu_device.train"),
        "compat": M("npu_device.compat"), "configs": M("npu_device.configs"), "npu_device": M("npu_device.npu_device"),
    }
    inner = {n: top[n] for n in ("open", "global_options", "global_npu_ctx", "gen_npu_ops", "npu_compat_function",
                                 "set_npu_loop_size", "is_inf_nan_enabled", "set_device_sat_mode", "npu_run_context")}
    inner["enable_v1"] = M(f"{_HERE}.compat:enable_v1")
    ops = f"{_HERE}.ops"
    gen = {
        "fast_gelu": M(f"{ops}:fast_gelu", "x * sigmoid(1.702 x), CANN's FastGelu formula (12 uses)"),
        "fast_gelu_v2": M(f"{ops}:fast_gelu_v2", "as fast_gelu"),
        "fast_gelu_grad": M(f"{ops}:fast_gelu_grad", "its derivative times the gradient (7 uses)"),
        "fused_layer_norm": M(f"{ops}:fused_layer_norm", "(y, mean, variance) over the axes from begin_norm_axis"),
        "fused_layer_norm_grad": M(f"{ops}:fused_layer_norm_grad", "(pd_x, pd_gamma, pd_beta)"),
        **{n: M(f"{ops}:{n}", "a uint8 keep mask, one byte per element (the NPU packs bits)")
           for n in ("drop_out_gen_mask", "drop_out_gen_mask_v3")},
        **{n: M(f"{ops}:{n}", "x * mask / keep_prob") for n in ("drop_out_do_mask", "drop_out_do_mask_v3")},
        **{n: U(_KERNEL) for n in (
            "lars_v2", "lamb_apply_optimizer_assign", "lamb_apply_weight_assign", "adam_apply_one_assign",
            "adam_apply_one_with_decay_assign", "basic_lstm_cell", "basic_lstm_cell_c_state_grad",
            "basic_lstm_cell_weight_grad", "basic_lstm_cell_input_grad", "dynamic_rnn", "dynamic_rnn_grad",
            "dynamic_gru_v2", "dynamic_gru_v2_grad")},
        **{n: U("the NPU's float status register; overflow is checked on the gradients here "
                "(NpuLossScaleOptimizer)") for n in ("npu_get_float_status_v2", "npu_clear_float_status_v2",
                                                     "npu_get_float_status", "npu_clear_float_status")},
    }
    dist = f"{_HERE}.distribute"
    distribute = {
        "all_reduce": M(f"{dist}:all_reduce", "npurun's collectives (as NPUDistributedOptimizer); mean = sum / "
                                              "workers; returns the values outside a cluster"),
        "broadcast": M(f"{dist}:broadcast", "assigns the root rank's value to each variable"),
        "npu_distributed_keras_optimizer_wrapper": M(f"{dist}:npu_distributed_keras_optimizer_wrapper",
                                                     "apply_gradients all-reduces the gradients first"),
        "shard_and_rebatch_dataset": M(f"{dist}:shard_and_rebatch_dataset", "(dataset.shard(n, rank), "
                                                                             "global_bs // n)"),
        "grouping_gradients_apply": U("weight-update grouping over NPU device groups; use all_reduce"),
        "grouping_broadcast": U("weight-update grouping over NPU device groups; use broadcast"),
    }
    return [
        t.AdapterModule("npu_device", "The TensorFlow 2 adapter's package (`import npu_device`: 103 uses; "
                        "`import npu_device as npu`: 20).", top, package=True),
        t.AdapterModule("npu_device.npu_device", "The module behind the package's names.", inner),
        t.AdapterModule("npu_device.gen_npu_ops", "The adapter's NPU kernels (`from npu_device import "
                        "gen_npu_ops`: 25 uses).", gen),
        t.AdapterModule("npu_device.ops", "Operators (`npu_device.ops.gelu`: 21 uses).",
                        {"gelu": M(f"{ops}:gelu", "TensorFlow's gelu when eager, fast_gelu in a graph, as the "
                                                  "adapter")}),
        t.AdapterModule("npu_device.distribute", "Collectives for TensorFlow 2 code (~60 uses).", distribute),
        t.AdapterModule("npu_device.train", "Training helpers.", {"optimizer": M("npu_device.train.optimizer")},
                        package=True),
        t.AdapterModule("npu_device.train.optimizer", "Optimizers.", {
            "NpuLossScaleOptimizer": M(f"{_HERE}.loss_scale:NpuLossScaleOptimizer",
                                       "a Keras LossScaleOptimizer; a step with inf/NaN gradients applies no update, "
                                       "dynamic or fixed scale (16 uses)")}),
        t.AdapterModule("npu_device.compat", "TensorFlow 1 compatibility.", {
            "enable_v1": M(f"{_HERE}.compat:enable_v1", "tf.compat.v1.disable_v2_behavior(), as the adapter (11 "
                                                        "uses)"),
            "v1": M("npu_device.compat.v1")}, package=True),
        t.AdapterModule("npu_device.compat.v1", "The adapter's TF 1 package inside npu_device.", {
            "SessionConfigBuilder": M(f"{_HERE}.compat:SessionConfigBuilder"),
            "npu_init": M("npu_device.compat.v1.npu_init"),
            "estimator": M("npu_device.compat.v1.estimator")}, package=True),
        t.AdapterModule("npu_device.compat.v1.npu_init", "`from npu_device.compat.v1.npu_init import *` (15 "
                        "uses): the names of `npu_bridge.npu_init`.", dict(t.NPU_INIT)),
        t.AdapterModule("npu_device.compat.v1.estimator", "Estimator-side modules of the TF 1 package.",
                        {"npu_ops": M("npu_device.compat.v1.estimator.npu_ops")}, package=True),
        t.AdapterModule("npu_device.compat.v1.estimator.npu_ops", "As `npu_bridge.estimator.npu_ops`.",
                        dict(t.NPU_OPS)),
        t.AdapterModule("npu_device.configs", "Option classes.", {
            "run_context_options": U("run-context options (graph memory recompute) of the Ascend graph engine"),
            "experimental": U(_GE_ONLY)}, package=True),
    ]
