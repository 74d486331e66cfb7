"""Rules between options, and the RunConfig-style cluster properties."""
import json
import warnings

import pytest

from npurun import NPURunConfig
from npurun.config import OptionConflictError


def make(**options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NPURunConfig(**options)


def test_checkpoint_steps_and_secs_are_exclusive():
    with pytest.raises(ValueError, match="save_checkpoints_steps.*save_checkpoints_secs"):
        NPURunConfig(save_checkpoints_steps=10, save_checkpoints_secs=60)


def test_checkpoint_defaults_to_100_steps_and_zero_disables():
    assert make().save_checkpoints_steps == 100
    assert make(save_checkpoints_secs=30).save_checkpoints_steps is None
    assert make(save_checkpoints_steps=0).save_checkpoints_steps == 0


def test_loop_rules():
    with pytest.raises(OptionConflictError, match="mix_compile_mode.*got 10"):
        NPURunConfig(iterations_per_loop=10, mix_compile_mode=True)
    with pytest.raises(OptionConflictError, match="enable_data_pre_proc"):
        NPURunConfig(iterations_per_loop=10, enable_data_pre_proc=False)
    with pytest.raises(OptionConflictError, match="lazy_recompile"):
        NPURunConfig(iterations_per_loop=2, dynamic_graph_execute_mode="lazy_recompile")
    with pytest.warns(UserWarning, match="save_checkpoints_steps=15 is not a multiple of iterations_per_loop=10"):
        NPURunConfig(iterations_per_loop=10, save_checkpoints_steps=15)
    with pytest.warns(UserWarning, match="log_step_count_steps=25"):
        NPURunConfig(iterations_per_loop=10, save_checkpoints_steps=20, log_step_count_steps=25)


def test_precision_list_rules(tmp_path):
    mixlist = tmp_path / "ops.json"
    mixlist.write_text('{"white-list": {"to-add": ["MatMul"]}}')
    with pytest.raises(OptionConflictError, match="modify_mixlist.*mixed precision"):
        NPURunConfig(modify_mixlist=str(mixlist))
    with pytest.raises(OptionConflictError, match="modify_mixlist"):
        NPURunConfig(modify_mixlist=str(mixlist), precision_mode="force_fp16")
    make(modify_mixlist=str(mixlist), precision_mode="allow_mix_precision_bf16")
    with pytest.raises(OptionConflictError, match="optypelist_for_implmode.*op_select_implmode"):
        NPURunConfig(optypelist_for_implmode="Pooling")
    ini = tmp_path / "p.ini"
    ini.write_text("Pooling=high_precision\n")
    with pytest.warns(UserWarning, match="op_precision_mode is set: it takes precedence"):
        NPURunConfig(op_precision_mode=str(ini), op_select_implmode="high_performance")


def test_compile_cache_needs_debug_level_0_or_3():
    with pytest.warns(UserWarning, match="op_debug_level=1"):
        NPURunConfig(op_compiler_cache_mode="enable", op_debug_level=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NPURunConfig(op_compiler_cache_mode="enable", op_debug_level=3)
    assert not [w for w in caught if "has no effect with op_debug_level" in str(w.message)]


def test_memory_sum_above_31_gb_warns_but_is_accepted():
    with pytest.warns(UserWarning, match="31 GB"):
        config = NPURunConfig(graph_memory_max_size=30 * 1024 ** 3)
    assert config.graph_memory_max_size == 30 * 1024 ** 3


def test_dynamic_settings_without_dynamic_input_warn_that_they_are_ignored():
    with pytest.warns(UserWarning, match="dynamic_graph_execute_mode='lazy_recompile' is set but dynamic_input is "
                                         "False"):
        NPURunConfig(dynamic_graph_execute_mode="lazy_recompile")
    with pytest.warns(UserWarning, match="dynamic_inputs_shape_range is set but dynamic_input is False"):
        NPURunConfig(dynamic_inputs_shape_range="data:[1~4]")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NPURunConfig(dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile",
                     dynamic_inputs_shape_range="data:[1~4]")


def test_local_device_list_needs_local_rank_id():
    with pytest.raises(OptionConflictError, match="local_rank_id"):
        NPURunConfig(local_device_list="0,1")


class ParameterServerStrategyV1:
    pass


def test_distribute_needs_a_tf_config_cluster(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(OptionConflictError, match="TF_CONFIG"):
        NPURunConfig(distribute=ParameterServerStrategyV1())
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["h:1"], "worker": ["h:2", "h:3"]},
                                                "task": {"type": "worker", "index": 1}}))
    with pytest.raises(OptionConflictError, match="ps"):
        NPURunConfig()
    config = make(distribute=ParameterServerStrategyV1())
    assert (config.num_ps_replicas, config.num_worker_replicas) == (1, 2)
    assert (config.task_type, config.task_id, config.is_chief) == ("worker", 1, False)
    assert config.master == "grpc://h:3"
    assert config.cluster_spec == {"ps": ["h:1"], "worker": ["h:2", "h:3"]}


def test_cluster_properties_without_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.delenv("RANK_ID", raising=False)
    config = NPURunConfig()
    assert (config.is_chief, config.task_type, config.task_id) == (True, "worker", 0)
    assert (config.num_worker_replicas, config.num_ps_replicas, config.master) == (1, 0, "")
    assert config.cluster_spec == {}


@pytest.mark.parametrize("rank,chief", [("0", True), ("3", False)])
def test_rank_id_decides_the_chief(monkeypatch, rank, chief):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setenv("RANK_ID", rank)
    assert NPURunConfig().is_chief is chief


def test_chief_job_in_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["c:1"], "worker": ["w:1"]},
                                                "task": {"type": "chief", "index": 0}}))
    config = NPURunConfig()
    assert config.is_chief and config.num_worker_replicas == 2 and config.global_id_in_cluster == 0


@pytest.mark.parametrize("raw,match", [
    ("{not json", "not valid JSON"),
    (json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}}), "not a job"),
    (json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 4}}), "out of range"),
])
def test_bad_tf_config_is_a_clear_error(monkeypatch, raw, match):
    monkeypatch.setenv("TF_CONFIG", raw)
    with pytest.raises(ValueError, match=match):
        NPURunConfig()


def test_migration_only_options_warn_once_saying_what_to_use():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NPURunConfig(train_distribute=object())
    messages = [str(w.message) for w in caught if "train_distribute" in str(w.message)]
    assert len(messages) == 1, messages
    assert "set with `distribute`" in messages[0]
