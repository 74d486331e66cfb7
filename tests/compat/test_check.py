"""npurun check: the static report of options, parameter_map entries, adapter names and TF names."""
import json
import textwrap

from npurun.tools.check import check_source
from npurun.config import OPTIONS

from .conftest import SCRIPTS, run_compat

SCRIPT = textwrap.dedent("""\
    import tensorflow.compat.v1 as tf
    from npu_bridge.npu_init import *
    from npu_bridge.estimator import npu_ops
    import npu_bridge.estimator.npu.keras_to_npu

    config = NPURunConfig(iterations_per_loop=10, precision_mode="allow_mix_precision", enable_small_channel=1,
                          graph_memory_max_size=str(26 * 1024 ** 3), op_debug_level=9, no_such_option=True)
    run_config = tf.estimator.RunConfig(save_checkpoints_steps=10, device_fn=None)
    y = npu_ops.dropout(x, 0.9)
    z = npu_ops.LARS(w, g, 0.1)
    rank = get_rank_id()
    set_split_strategy_by_idx([20, 100])
    net = tf.layers.dense(x, 10)
    custom_op = config_proto.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
    custom_op.parameter_map["iterations_per_loop"].s = b"10"
    custom_op.parameter_map["enable_dump"].b = True
    custom_op.parameter_map["mystery_key"].i = 3
    x = w = g = config_proto = None
    """)


def _by_name(findings):
    return {f.name: f for f in findings}


def test_options_have_their_status_mechanism_and_literal_checks():
    found = _by_name(f for f in check_source(SCRIPT) if f.section == "option")
    loop = found["iterations_per_loop=10"]
    assert (loop.line, loop.status, loop.detail) == (6, OPTIONS["iterations_per_loop"].status,
                                                    OPTIONS["iterations_per_loop"].mechanism)
    assert found["enable_small_channel=1"].status == "not supported"
    assert "graph_memory_max_size=(not a literal: not checked)" in found
    invalid = found["op_debug_level=9"]
    assert invalid.error and "invalid value" in invalid.detail and "op_debug_level" in invalid.detail
    assert found["no_such_option"].error and "TypeError" in found["no_such_option"].detail
    assert found["device_fn"].status == "dropped" and not found["device_fn"].error
    assert found["save_checkpoints_steps=10"].status == OPTIONS["save_checkpoints_steps"].status


def test_parameter_map_entries():
    found = _by_name(f for f in check_source(SCRIPT) if f.section == "parameter_map")
    assert found["use_off_line"].status == "ignored"
    precision = found["precision_mode .s = 'allow_mix_precision'"]
    assert precision.status == OPTIONS["precision_mode"].status and not precision.error
    wrong_field = found["iterations_per_loop .s = '10'"]
    assert wrong_field.error and "must be set as int (.i)" in wrong_field.detail
    assert found["enable_dump (option dump_config) .b = True"].status == OPTIONS["dump_config"].status
    assert found["mystery_key"].status == "ignored" and "not an NPURunConfig option" in found["mystery_key"].detail


def test_adapter_and_tensorflow_names():
    findings = check_source(SCRIPT)
    found = _by_name(f for f in findings if f.section in ("adapter", "tensorflow"))
    assert found["npu_bridge.estimator.npu_ops.dropout"].status == "mapped"
    assert not found["npu_bridge.estimator.npu_ops.dropout"].error
    lars = found["npu_bridge.estimator.npu_ops.LARS"]
    assert lars.status == "unsupported" and lars.error and "fused Ascend kernel" in lars.detail
    rnn = found["npu_bridge.estimator.npu.keras_to_npu"]
    assert rnn.error and "importing it raises" in rnn.detail
    assert found["npu_bridge.npu_init.set_split_strategy_by_idx"].status == "accepted, no effect here"
    assert "npu_bridge.npu_init.get_rank_id" in found  # brought in by the star import
    assert found["tensorflow.compat.v1.layers.dense"].status == "provided by `npurun run`"
    assert found["tensorflow.compat.v1.estimator.RunConfig"].status == "provided by `npurun run`"
    assert all(f.section != "adapter" or f.name.startswith("npu_bridge") for f in findings)


def test_cli_text_json_and_exit_status(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    text = run_compat("check", script)
    assert text.returncode == 1  # LARS, keras_to_npu, bad op_debug_level, unknown option
    assert "NPURunConfig / RunConfig options:" in text.stdout and "will raise here (marked !)" in text.stdout
    assert " ! line 10: npu_bridge.estimator.npu_ops.LARS -- unsupported" in text.stdout
    data = json.loads(run_compat("check", script, "--format", "json").stdout)
    assert data["script"] == str(script) and any(f["name"] == "mystery_key" for f in data["findings"])

    classifier = SCRIPTS / "image_classifier.py"
    line = next(i for i, text in enumerate(classifier.read_text().splitlines(), 1) if "precision_mode=" in text)
    clean = run_compat("check", classifier)
    assert clean.returncode == 0, clean.stdout
    assert "iterations_per_loop=(not a literal: not checked)" in clean.stdout  # a command-line flag there
    assert f"line {line}: precision_mode='allow_mix_precision' -- effect" in clean.stdout
    assert "npu_bridge.npu_init.NPUDistributedOptimizer" in clean.stdout
