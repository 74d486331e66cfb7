"""fusion_switch_file, enable_scope_fusion_passes and variable_format_optimize, observed in the
graphs the executor really runs (RunMetadata.partition_graphs).

The executed graphs come from probes.py, run with oneDNN off and on (the `both_onednn` fixture):
oneDNN renames the kernels (_MklMatMul, _MklNativeFusedMatMul, _MklNativeConv2D), op_names.py
names both.
"""
import json

import pytest
from tensorflow.core.protobuf import rewriter_config_pb2

from helpers import options, placeholder_step, session_for, v1
from npurun.runtime import fusion_switches
from op_names import CONV2D, FUSED_MATMUL, PLAIN_MATMUL, generic_set


def switch_file(tmp_path, graph=None, ub=None):
    groups = {}
    if graph is not None:
        groups["GraphFusion"] = graph
    if ub is not None:
        groups["UBFusion"] = ub
    path = tmp_path / "fusion_switch.cfg"
    path.write_text(json.dumps({"Switch": groups}))
    return str(path)


def fused(ops) -> bool:
    """MatMul+BiasAdd+Relu ran as one fused kernel: a fused MatMul, no separate BiasAdd/Relu."""
    return bool(set(ops) & FUSED_MATMUL) and not {"BiasAdd", "Relu"} & set(ops)


def plain(ops) -> bool:
    """MatMul, BiasAdd and Relu ran as separate kernels and nothing was fused."""
    return not set(ops) & FUSED_MATMUL and bool(set(ops) & PLAIN_MATMUL) and {"BiasAdd", "Relu"} <= set(ops)


def test_matmul_bias_relu_is_fused_by_default(both_onednn):
    ops = both_onednn.value("runtime:default")
    assert fused(ops), ops
    assert ("_FusedMatMul" in ops) != both_onednn.onednn  # oneDNN runs its own fused kernel


@pytest.mark.parametrize("probe", ["matmul_pass_off", "all_off",
                                   "remapping_off"])  # TensorFlow's own name for the optimizer
def test_switching_the_fusion_off_leaves_plain_matmul(both_onednn, probe):
    ops = both_onednn.value("runtime:" + probe)
    assert plain(ops), ops
    assert generic_set(ops) >= {"MatMul", "BiasAdd", "Relu"}


def test_named_entry_beats_all(both_onednn):
    assert fused(both_onednn.value("runtime:named_entry_beats_all"))


def test_all_off_switches_the_safe_set_only(tmp_path):
    plan_options = options(fusion_switch_file=switch_file(tmp_path, {"ALL": "off"}))
    from npurun.runtime.contributors import build_plan

    rewrite = build_plan(plan_options, "train").config_proto.graph_options.rewrite_options
    off = rewriter_config_pb2.RewriterConfig.OFF
    assert all(getattr(rewrite, name) == off for name in fusion_switches.SAFE_GRAPPLER)
    assert rewrite.layout_optimizer != off  # owned by variable_format_optimize
    assert rewrite.function_optimization != off


def test_passes_without_equivalent_are_reported(tmp_path):
    path = switch_file(tmp_path, {"SoftmaxFusionPass": "off", "MatMulBiasAddFusionPass": "on"},
                       ub={"TbePool2dQuantFusionPass": "off", "NoSuchPass": "on"})
    with pytest.warns(UserWarning) as caught:
        with session_for(options(fusion_switch_file=path), placeholder_step):
            pass
    text = " ".join(str(w.message) for w in caught)
    assert "GraphFusion SoftmaxFusionPass" in text
    assert "UBFusion TbePool2dQuantFusionPass" in text and "UBFusion NoSuchPass" in text
    assert "MatMulBiasAddFusionPass" not in text.split("no equivalent")[1]
    # UBFusion acts on XLA, which does not compile here (jit_compile 'auto' on a CPU)
    assert "no effect" in text


def test_disagreeing_entries_of_one_optimizer_turn_it_off(tmp_path, both_onednn):
    path = switch_file(tmp_path, {"MatMulBiasAddFusionPass": "on", "ConvBatchnormFusionPass": "off"})
    with pytest.warns(UserWarning, match="'off' wins"):
        with session_for(options(fusion_switch_file=path), placeholder_step):
            pass
    assert plain(both_onednn.value("runtime:disagreeing_entries"))  # the same file, run in the probes


def test_scope_fusion_pass_switches_its_optimizer_on(both_onednn):
    assert plain(both_onednn.value("runtime:session_remapping_off"))
    assert fused(both_onednn.value("runtime:scope_fusion_pass_on"))  # remapping, ScopeLayerNormPass's, is on again


def test_scope_fusion_pass_without_equivalent_is_reported():
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.remapping = rewriter_config_pb2.RewriterConfig.OFF
    with pytest.warns(UserWarning, match="ScopeClipBoxesPass"):
        with session_for(options(session_config=config, enable_scope_fusion_passes="ScopeLayerNormPass,"
                                                                                   "ScopeClipBoxesPass"),
                         placeholder_step) as built:
            rewrite = built.plan.config_proto.graph_options.rewrite_options
    assert rewrite.remapping == rewriter_config_pb2.RewriterConfig.ON




# An NCHW convolution with grappler asked to convert NCHW to NHWC on the CPU (cpu_layout_conversion;
# probes.run_nchw_conv). TensorFlow's own CPU kernel has no NCHW; oneDNN's has.
def test_variable_format_optimize_true_converts_the_layout(both_onednn):
    layouts = both_onednn.value("runtime:layout_optimized")
    assert {fmt for op, fmt in layouts if op in CONV2D} == {"NHWC"}
    assert sum("Transpose" in op for op, _ in layouts) == 2  # into NHWC and back


def test_variable_format_optimize_false_keeps_the_layout(both_onednn):
    if both_onednn.onednn:  # the NCHW convolution reaches oneDNN's NCHW kernel as written
        assert both_onednn.value("runtime:layout_kept") == [["_MklNativeConv2D", "NCHW"]]
    else:  # it reaches TensorFlow's kernel, which has no NCHW on a CPU
        error, message = both_onednn.raised("runtime:layout_kept")
        assert error == "UnimplementedError" and "given the format: NCHW" in message
