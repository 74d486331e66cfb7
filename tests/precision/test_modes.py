"""precision_mode, modify_mixlist and implementation modes, observed in the executed graph (CPU, fp16).

Sessions come from `build_plan(NPURunConfig(...).options, "train")`, so the registered
contributor is what is exercised; the dtypes are read from the partition graphs TensorFlow ran.
Tests of float16 numerics take `force_low_precision` (NPURUN_FORCE_LOW_PRECISION=1): without it a
CPU with no fp16 hardware runs these modes in float32 (the machine policy, tested below too).
"""
import os
import warnings

import pytest
import tensorflow as tf

from npurun import NPURunConfig
from npurun.precision import modes, policy
from npurun.runtime.contributors import build_plan

from .helpers import dtypes_of, executed_nodes, low_precision_nodes, write

AMP_ENV_PREFIX = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"


def config(**options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NPURunConfig(**options)


@pytest.mark.parametrize("mode", [None, "allow_fp32_to_fp16", "force_fp32", "must_keep_origin_dtype"])
def test_graph_unchanged_without_a_low_precision_mode(mode):
    nodes = executed_nodes(config(precision_mode=mode))
    assert low_precision_nodes(nodes) == []
    assert dtypes_of(nodes, "MatMul") == {"float32"}


@pytest.mark.parametrize("options, tf32_off", [
    (dict(precision_mode="force_fp32"), True),
    (dict(precision_mode="must_keep_origin_dtype"), True),
    (dict(op_select_implmode="high_precision"), True),
    (dict(precision_mode="allow_fp32_to_fp16"), False),
    (dict(op_select_implmode="high_performance"), False),
    (dict(op_select_implmode="high_precision", optypelist_for_implmode="SoftmaxV2"), False),
])
def test_tf32_is_off_while_the_session_runs_for_full_precision(options, tf32_off):
    plan = build_plan(config(**options).options, "train")
    hooks = [hook for hook in plan.hooks if isinstance(hook, modes.TensorFloat32Hook)]
    assert bool(hooks) == tf32_off
    if tf32_off:
        before = tf.config.experimental.tensor_float_32_execution_enabled()
        hooks[0].begin()
        assert tf.config.experimental.tensor_float_32_execution_enabled() is False
        hooks[0].end(None)
        assert tf.config.experimental.tensor_float_32_execution_enabled() == before


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_fp16"])
def test_fp16_mixed_precision_lowers_matmul_and_keeps_deny_list_ops(mode, force_low_precision):
    nodes = executed_nodes(config(precision_mode=mode))
    assert dtypes_of(nodes, "MatMul") == {"float16"}
    assert dtypes_of(nodes, "Exp") == {"float32"}  # Exp is on TensorFlow's deny list


def test_force_fp16_lowers_an_op_the_default_lists_keep_in_float32(force_low_precision):
    assert dtypes_of(executed_nodes(config(precision_mode="allow_mix_precision")), "Exp") == {"float32"}
    forced = executed_nodes(config(precision_mode="force_fp16"))
    assert dtypes_of(forced, "Exp") == {"float16"}
    assert dtypes_of(forced, "MatMul") == {"float16"}
    assert dtypes_of(forced, "Sum") == {"float16"}  # deny list too


def test_force_fp16_keeps_high_precision_op_types_in_float32(tmp_path, force_low_precision):
    ini = write(tmp_path, "op_precision.ini", "Exp=high_precision\nMatmul=high_performance\n")
    nodes = executed_nodes(config(precision_mode="force_fp16", op_precision_mode=ini))
    assert dtypes_of(nodes, "Exp") == {"float32"}
    assert dtypes_of(nodes, "MatMul") == {"float16"}


def test_black_list_addition_keeps_matmul_in_float32_under_fp16(tmp_path, force_low_precision):
    mixlist = write(tmp_path, "ops_info.json", {"black-list": {"to-add": ["Matmul"]}})
    nodes = executed_nodes(config(precision_mode="allow_mix_precision", modify_mixlist=mixlist))
    assert dtypes_of(nodes, "MatMul") == {"float32"}


def test_two_configs_with_different_lists_in_one_process(tmp_path, force_low_precision):
    black = config(precision_mode="allow_mix_precision",
                   modify_mixlist=write(tmp_path, "black.json", {"black-list": {"to-add": ["Matmul"]}}))
    plain = config(precision_mode="allow_mix_precision")
    environ_before = dict(os.environ)
    for cfg, expected in ((black, "float32"), (plain, "float16"), (black, "float32")):
        assert dtypes_of(executed_nodes(cfg), "MatMul") == {expected}
        assert dict(os.environ) == environ_before  # the session's list variables are gone again
    assert not [key for key in os.environ if key.startswith(AMP_ENV_PREFIX)]


def test_bf16_without_onednn_warns_that_it_cannot_act(force_low_precision):
    cfg = config(precision_mode="allow_mix_precision_bf16")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = build_plan(cfg.options, "train")
    onednn_warnings = [w for w in caught if "TF_ENABLE_ONEDNN_OPTS=1" in str(w.message)]
    assert bool(onednn_warnings) == (not modes.onednn_enabled())
    assert plan.config_proto.graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 == 1


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_fp16", "force_fp16",
                                  "allow_mix_precision_bf16"])
def test_default_on_a_cpu_without_the_hardware_runs_float32_and_warns_once(mode, cpu_features):
    cpu_features()  # no avx512_bf16, amx_bf16, avx512_fp16, amx_fp16
    cfg = config(precision_mode=mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = executed_nodes(cfg)
        plan = build_plan(cfg.options, "eval")  # a second session of the same run
    assert low_precision_nodes(first) == []
    assert dtypes_of(first, "MatMul") == {"float32"}
    rewrite = plan.config_proto.graph_options.rewrite_options
    assert (rewrite.auto_mixed_precision_cpu, rewrite.auto_mixed_precision_onednn_bfloat16) == (0, 0)
    fallback = [str(w.message) for w in caught if issubclass(w.category, policy.LowPrecisionFallbackWarning)]
    assert len(fallback) == 1, fallback
    assert f"precision_mode={mode!r} runs in float32" in fallback[0] and "NPURUN_FORCE_LOW_PRECISION=1" in fallback[0]


@pytest.mark.parametrize("mode", ["allow_mix_precision", "force_fp16", "allow_mix_precision_bf16"])
def test_the_float32_fallback_is_exactly_the_default_modes_session(mode, cpu_features):
    # Same ConfigProto, environment and hooks as precision_mode=None: the run costs what float32 costs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fallback = build_plan(config(precision_mode=mode).options, "train")
        default = build_plan(config().options, "train")
    assert fallback.config_proto == default.config_proto
    assert fallback.env == default.env
    assert [type(h) for h in fallback.hooks] == [type(h) for h in default.hooks]


def test_forcing_on_the_same_cpu_gives_float16_without_the_warning(force_low_precision):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nodes = executed_nodes(config(precision_mode="allow_mix_precision"))
    assert dtypes_of(nodes, "MatMul") == {"float16"}
    assert not [w for w in caught if issubclass(w.category, policy.LowPrecisionFallbackWarning)]
