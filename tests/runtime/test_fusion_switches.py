"""fusion_switch_file, enable_scope_fusion_passes and variable_format_optimize, observed in the
graphs the executor really runs (RunMetadata.partition_graphs)."""
import json
import warnings

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from helpers import batch, mlp_step, options, placeholder_step, session_for, v1
from npurun.runtime import fusion_switches


def switch_file(tmp_path, graph=None, ub=None):
    groups = {}
    if graph is not None:
        groups["GraphFusion"] = graph
    if ub is not None:
        groups["UBFusion"] = ub
    path = tmp_path / "fusion_switch.cfg"
    path.write_text(json.dumps({"Switch": groups}))
    return str(path)


def executed(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with session_for(options(**kwargs), placeholder_step) as built:
            return built.run()[1]


def test_matmul_bias_relu_is_fused_by_default():
    ops = executed()
    assert "_FusedMatMul" in ops


@pytest.mark.parametrize("graph", [
    {"MatMulBiasAddFusionPass": "off"},
    {"ALL": "off"},
    {"remapping": "off"},  # TensorFlow's own name for the optimizer
])
def test_switching_the_fusion_off_leaves_plain_matmul(tmp_path, graph):
    ops = executed(fusion_switch_file=switch_file(tmp_path, graph))
    assert "_FusedMatMul" not in ops
    assert {"MatMul", "BiasAdd", "Relu"} <= ops


def test_named_entry_beats_all(tmp_path):
    ops = executed(fusion_switch_file=switch_file(tmp_path, {"ALL": "off", "MatMulBiasAddFusionPass": "on"}))
    assert "_FusedMatMul" in ops


def test_all_off_switches_the_safe_set_only(tmp_path):
    plan_options = options(fusion_switch_file=switch_file(tmp_path, {"ALL": "off"}))
    from npurun.runtime.plan import build_plan

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


def test_disagreeing_entries_of_one_optimizer_turn_it_off(tmp_path):
    path = switch_file(tmp_path, {"MatMulBiasAddFusionPass": "on", "ConvBatchnormFusionPass": "off"})
    with pytest.warns(UserWarning, match="'off' wins"):
        with session_for(options(fusion_switch_file=path), placeholder_step) as built:
            ops = built.run()[1]
    assert "_FusedMatMul" not in ops


def test_scope_fusion_pass_switches_its_optimizer_on():
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.remapping = rewriter_config_pb2.RewriterConfig.OFF
    assert "_FusedMatMul" not in executed(session_config=config)
    with pytest.warns(UserWarning, match="ScopeClipBoxesPass"):
        with session_for(options(session_config=config, enable_scope_fusion_passes="ScopeLayerNormPass,"
                                                                                   "ScopeClipBoxesPass"),
                         placeholder_step) as built:
            ops = built.run()[1]
    assert "_FusedMatMul" in ops  # remapping, ScopeLayerNormPass's equivalent, is on again


def nchw_conv(opts):
    x = v1.placeholder(tf.float32, [2, 3, 8, 8], name="x")
    w = v1.get_variable("w", [3, 3, 3, 4])
    y = tf.reduce_sum(tf.nn.conv2d(x, w, 1, "SAME", data_format="NCHW"))
    import numpy as np
    return y, {x: np.ones([2, 3, 8, 8], np.float32)}, []


def run_nchw_conv(optimize):
    # On a CPU grappler's layout optimizer converts NCHW convolutions to NHWC when asked to
    # (cpu_layout_conversion); without it the NCHW convolution reaches a kernel that has no NCHW.
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.cpu_layout_conversion = rewriter_config_pb2.RewriterConfig.NCHW_TO_NHWC
    with session_for(options(session_config=config, variable_format_optimize=optimize), nchw_conv) as built:
        metadata = v1.RunMetadata()
        built.session.run(built.fetch, built.feeds, options=v1.RunOptions(output_partition_graphs=True),
                          run_metadata=metadata)
    return {node.attr["data_format"].s for g in metadata.partition_graphs for node in g.node
            if node.op.startswith("Conv2D") or node.op == "_FusedConv2D"}


def test_variable_format_optimize_true_converts_the_layout():
    assert run_nchw_conv(True) == {b"NHWC"}


def test_variable_format_optimize_false_keeps_the_layout():
    with pytest.raises(tf.errors.UnimplementedError, match="given the format: NCHW"):
        run_nchw_conv(False)
