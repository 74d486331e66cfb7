"""Older adapters' profiling options: a `:`-separated list ('training_trace:task_trace') or enable_options=[...]."""
import json

import pytest
import tensorflow as tf

import npurun
from npurun.config import NPURunConfig, ProfilingConfig, param_map


def test_colon_list_with_profiling_off_is_accepted_and_read_as_switches():
    config = ProfilingConfig(False, "training_trace:task_trace")
    assert config.options.is_on("training_trace") and config.options.is_on("task_trace")
    assert not config.enable_profiling
    assert json.loads(config.profiling_options)["task_trace"] == "on"  # stored in today's JSON form
    single = ProfilingConfig(enable_profiling=False, profiling_options="task_trace")
    assert single.options.is_on("task_trace") and not single.options.is_on("training_trace")


def test_enable_options_list_is_the_same_as_the_colon_list():
    assert ProfilingConfig(False, enable_options=["training_trace", "task_trace"]).options == \
        ProfilingConfig(False, "training_trace:task_trace").options
    with pytest.raises(ValueError, match="enable_options.*profiling_options"):
        ProfilingConfig(False, profiling_options="task_trace", enable_options=["task_trace"])
    with pytest.raises(ValueError, match=r"'op_trace'.*allowed: .*training_trace"):
        ProfilingConfig(False, enable_options=["op_trace"])


def test_old_style_enabled_profiling_writes_to_a_default_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("FP_POINT", "dense/MatMul")
    monkeypatch.delenv("BP_POINT", raising=False)
    with pytest.warns(UserWarning, match="profiling"):
        config = ProfilingConfig(True, "training_trace")
    assert config.options.get("output") == "profiling" and config.options.get("fp_point") == "dense/MatMul"


def test_old_style_list_in_a_hand_written_npu_optimizer_entry():
    proto = tf.compat.v1.ConfigProto()
    param_map.add_npu_optimizer(proto, {})
    entry = param_map.find_npu_optimizer(proto)
    entry.parameter_map["profiling_mode"].b = False
    entry.parameter_map["profiling_options"].s = b"training_trace:task_trace"
    config = NPURunConfig(session_config=proto)
    assert config.profiling_config.options.is_on("task_trace")


def test_json_options_are_unchanged():
    text = json.dumps({"output": "/tmp/p", "task_trace": "on"})
    assert ProfilingConfig(True, text).profiling_options == text
    with pytest.raises(ValueError, match="not valid JSON"):
        ProfilingConfig(False, "{task_trace")
    assert npurun.ProfilingConfig is ProfilingConfig
