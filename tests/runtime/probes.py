"""Probes run under both oneDNN settings (tests/onednn_probes.py): executed op types of the small
MLP step under the fusion switches, layouts under variable_format_optimize, graph dumps of
op_debug_level. Each returns JSON-able observations; files stay in `workdir`."""
from __future__ import annotations

import json
import os
import warnings

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from helpers import options, placeholder_step, session_for, v1

OFF = rewriter_config_pb2.RewriterConfig.OFF


def setup():
    tf.compat.v1.disable_eager_execution()  # as the runtime tests' conftest does


def executed(**kwargs) -> list:
    """Executed op types of one training step of the placeholder MLP, warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with session_for(options(**kwargs), placeholder_step) as built:
            return sorted(built.run()[1])


def switch_file(workdir, graph) -> str:
    path = os.path.join(workdir, "fusion_switch.cfg")
    with open(path, "w") as handle:
        json.dump({"Switch": {"GraphFusion": graph}}, handle)
    return path


def probe_default(workdir):
    return executed()


def probe_matmul_pass_off(workdir):
    return executed(fusion_switch_file=switch_file(workdir, {"MatMulBiasAddFusionPass": "off"}))


def probe_all_off(workdir):
    return executed(fusion_switch_file=switch_file(workdir, {"ALL": "off"}))


def probe_remapping_off(workdir):
    return executed(fusion_switch_file=switch_file(workdir, {"remapping": "off"}))


def probe_named_entry_beats_all(workdir):
    return executed(fusion_switch_file=switch_file(workdir, {"ALL": "off", "MatMulBiasAddFusionPass": "on"}))


def probe_disagreeing_entries(workdir):
    return executed(fusion_switch_file=switch_file(workdir, {"MatMulBiasAddFusionPass": "on",
                                                             "ConvBatchnormFusionPass": "off"}))


def _remapping_off():
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.remapping = OFF
    return config


def probe_session_remapping_off(workdir):
    return executed(session_config=_remapping_off())


def probe_scope_fusion_pass_on(workdir):
    return executed(session_config=_remapping_off(), enable_scope_fusion_passes="ScopeLayerNormPass")


def nchw_conv(opts):
    x = v1.placeholder(tf.float32, [2, 3, 8, 8], name="x")
    w = v1.get_variable("w", [3, 3, 3, 4])
    y = tf.reduce_sum(tf.nn.conv2d(x, w, 1, "SAME", data_format="NCHW"))
    return y, {x: np.ones([2, 3, 8, 8], np.float32)}, []


def run_nchw_conv(optimize) -> list:
    """[(op, data_format)] of the executed convolutions and transposes of an NCHW convolution, with
    grappler asked to convert NCHW to NHWC on the CPU (cpu_layout_conversion)."""
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.cpu_layout_conversion = rewriter_config_pb2.RewriterConfig.NCHW_TO_NHWC
    with session_for(options(session_config=config, variable_format_optimize=optimize), nchw_conv) as built:
        metadata = v1.RunMetadata()
        built.session.run(built.fetch, built.feeds, options=v1.RunOptions(output_partition_graphs=True),
                          run_metadata=metadata)
    return sorted([node.op, node.attr["data_format"].s.decode()] for g in metadata.partition_graphs
                  for node in g.node if "Conv2D" in node.op or "Transpose" in node.op)


def probe_layout_optimized(workdir):
    return run_nchw_conv(True)


def probe_layout_kept(workdir):
    return run_nchw_conv(False)


def graph_dump(workdir, level) -> list:
    with session_for(options(op_debug_level=level, debug_dir=workdir), placeholder_step) as built:
        built.run()
        built.run()
    return sorted(os.listdir(os.path.join(workdir, "kernel_meta")))


def probe_dump_level_1(workdir):
    return graph_dump(workdir, 1)


def probe_dump_level_3(workdir):
    return graph_dump(workdir, 3)


def probe_dump_level_4(workdir):
    return graph_dump(workdir, 4)

