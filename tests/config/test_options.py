"""Every NPURunConfig option: its documented default, a valid non-default value, and each class of
invalid value raising the documented exception with the option's name in the message.

The expectations below are written from ../shared/spec/options.md, not read from the option
table, so a wrong row in the table fails here.
"""
import json
import warnings

import pytest

from npurun import DumpConfig, NPURunConfig, ProfilingConfig
from npurun.config import OPTIONS


@pytest.fixture
def files(tmp_path):
    fusion = tmp_path / "fusion_switch.cfg"
    fusion.write_text(json.dumps({"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"}}}))
    bad_fusion = tmp_path / "bad_fusion.cfg"
    bad_fusion.write_text('{"Switch": {"GraphFusion": {"ALL": "maybe"}}}')
    mixlist = tmp_path / "ops_info.json"
    mixlist.write_text(json.dumps({"black-list": {"to-add": ["Matmul"]}}))
    bad_mixlist = tmp_path / "bad_ops_info.json"
    bad_mixlist.write_text(json.dumps({"purple-list": {"to-add": ["Matmul"]}}))
    ini = tmp_path / "op_precision.ini"
    ini.write_text("AvgPoolV2=high_precision\nReduceMeanD=high_performance\n")
    bad_ini = tmp_path / "bad.ini"
    bad_ini.write_text("AvgPoolV2=fastest\n")
    spaced = tmp_path / "has space"
    spaced.mkdir()
    (spaced / "f.cfg").write_text(fusion.read_text())
    return {"fusion": str(fusion), "bad_fusion": str(bad_fusion), "mixlist": str(mixlist),
            "bad_mixlist": str(bad_mixlist), "ini": str(ini), "bad_ini": str(bad_ini),
            "spaced_fusion": str(spaced / "f.cfg"), "dir": str(tmp_path), "missing": str(tmp_path / "nope.json")}


class PS:  # stands in for tf.distribute's ParameterServerStrategy (recognised by class name)
    pass


PS.__name__ = "ParameterServerStrategyV1"

# name: (documented default, valid non-default value, [(invalid value, exception type), ...]).
# Values may be callables of the `files` fixture.
CASES = {
    "model_dir": (None, lambda f: f["dir"] + "/model", [(5, TypeError), ("", ValueError)]),
    "tf_random_seed": (None, 42, [("42", TypeError), (1.5, TypeError), (True, TypeError)]),
    "save_summary_steps": (0, 10, [(-1, ValueError), ("10", TypeError), (None, TypeError)]),
    "save_checkpoints_steps": (100, 50, [(-1, ValueError), (2.5, ValueError), ("50", TypeError)]),  # None+None -> 100; 2.0 is 2
    "save_checkpoints_secs": (None, 60, [(0, ValueError), (-5, ValueError), ("60", TypeError)]),
    "session_config": (None, "proto", [({"a": 1}, TypeError), ("x", TypeError)]),
    "keep_checkpoint_max": (5, 0, [(-1, ValueError), ("5", TypeError)]),
    "keep_checkpoint_every_n_hours": (10000, 0.5, [(0, ValueError), ("1", TypeError), (None, TypeError)]),
    "log_step_count_steps": (100, 10, [(0, ValueError), ("1", TypeError)]),
    "train_distribute": (None, "migrated", []),
    "eval_distribute": (None, "migrated", []),
    "iterations_per_loop": (1, 1000, [(0, ValueError), (-3, ValueError), (2.0, TypeError), ("10", TypeError),
                                      (None, TypeError), (True, TypeError)]),
    "profiling_config": (None, lambda f: ProfilingConfig(True, json.dumps({"output": f["dir"]})),
                         [("on", TypeError), ({}, TypeError)]),
    "dump_config": (None, lambda f: DumpConfig(enable_dump=True, dump_path=f["dir"]), [("on", TypeError)]),
    "enable_data_pre_proc": (True, False, [(1, TypeError), ("True", TypeError), (None, TypeError)]),
    "precision_mode": (None, "allow_mix_precision", [("fp16", ValueError), ("FORCE_FP16", ValueError),
                                                     (16, TypeError)]),
    "enable_reduce_precision": (False, True, [(1, TypeError)]),
    "variable_format_optimize": (True, False, [(0, TypeError)]),
    "mix_compile_mode": (False, True, [(1, TypeError), ("False", TypeError)]),
    "jit_compile": ("auto", "true", [("on", ValueError), ("True", ValueError), (True, TypeError),
                                     (None, TypeError)]),
    "hcom_parallel": (False, True, [(1, TypeError)]),
    "graph_memory_max_size": (None, str(26 * 1024 ** 3), [(274877906945, ValueError), ("-1", ValueError),
                                                          ("26GB", ValueError), (1.5, TypeError)]),
    "variable_memory_max_size": (None, 5 * 1024 ** 3, [(-1, ValueError), ("five", ValueError),
                                                       ([1], TypeError)]),
    "auto_tune_mode": (None, "RL,GA", [("XX", ValueError), ("GA,GA", ValueError), (1, TypeError)]),
    "stream_max_parallel_num": (None, "DNN_VM_TF:10,DNN_V100:1", [("DNN_VM_TF:14", ValueError),
                                                                  ("DNN_X:1", ValueError),
                                                                  ("DNN_VM_TF", ValueError), (10, TypeError)]),
    "is_tailing_optimization": (False, True, [(1, TypeError)]),
    "horovod_mode": (False, True, [(1, TypeError)]),
    "graph_run_mode": (1, 0, [(2, ValueError), (-1, ValueError), ("1", TypeError)]),
    "op_debug_level": (0, 3, [(5, ValueError), (-1, ValueError), ("1", TypeError)]),
    "enable_scope_fusion_passes": (None, "ScopeLayerNormPass,ScopeClipBoxesPass", [(",,", ValueError),
                                                                                  (3, TypeError)]),
    "distribute": (None, "ps", [("strategy", TypeError)]),
    "enable_exception_dump": (0, 1, [(3, ValueError), (True, TypeError), ("1", TypeError)]),
    "op_select_implmode": (None, "high_precision", [("fast", ValueError), (1, TypeError)]),
    "optypelist_for_implmode": (None, "Pooling,SoftmaxV2", [("", ValueError), (1, TypeError)]),
    "dynamic_input_config": (None, "anything", []),
    "aoe_mode": (None, "2", []),
    "work_path": (None, "/tmp", []),
    "distribute_config": (None, "x", []),
    "buffer_optimize": (None, "l2_optimize", [("l3_optimize", ValueError), (1, TypeError)]),
    "enable_small_channel": (0, 1, [(2, ValueError), ("1", TypeError)]),
    "fusion_switch_file": (None, lambda f: f["fusion"], [(lambda f: f["missing"], ValueError),
                                                          (lambda f: f["bad_fusion"], ValueError),
                                                          (lambda f: f["spaced_fusion"], ValueError),
                                                          (3, TypeError)]),
    "enable_compress_weight": (False, True, [(1, TypeError)]),
    "compress_weight_conf": (None, "/tmp/conf", []),
    "op_compiler_cache_mode": ("disable", "enable", [("on", ValueError), (1, TypeError)]),
    "op_compiler_cache_dir": (None, lambda f: f["dir"] + "/cache", [("/tmp/has space", ValueError),
                                                                    ("/tmp/a$b", ValueError), (1, TypeError)]),
    "debug_dir": (None, lambda f: f["dir"], [(lambda f: f["fusion"], ValueError), (1, TypeError)]),
    "dynamic_input": (False, True, [(1, TypeError)]),
    "dynamic_graph_execute_mode": ("dynamic_execute", "lazy_recompile", [("static", ValueError),
                                                                         (1, TypeError)]),
    "dynamic_inputs_shape_range": (None, "getnext:[128 ,3~5, 2~128, -1],[64 ,3~5, 2~128, -1];data:[128 ,3~5, 2~128, -1]",
                                   [("input:[1,2]", ValueError), ("getnext:[5~3]", ValueError),
                                    ("getnext:[1,2", ValueError), (1, TypeError)]),
    "local_rank_id": (None, 0, [(8, ValueError), (-1, ValueError), ("0", TypeError)]),
    "local_device_list": (None, "0,1", [("0,9", ValueError), ("a", ValueError), (1, TypeError)]),
    "session_device_id": (None, 0, [(-1, ValueError), ("0", TypeError)]),
    "modify_mixlist": (None, lambda f: f["mixlist"], [(lambda f: f["missing"], ValueError),
                                                      (lambda f: f["bad_mixlist"], ValueError), (1, TypeError)]),
    "op_precision_mode": (None, lambda f: f["ini"], [(lambda f: f["bad_ini"], ValueError),
                                                     (lambda f: f["missing"], ValueError), (1, TypeError)]),
    "customize_dtypes": (None, lambda f: f["missing"], [("", ValueError), (1, TypeError)]),
    "device_type": ("default", "npu", []),
    "hccl_timeout": (None, 600, [(0, ValueError), ("600", TypeError)]),
    "op_wait_timeout": (None, 120, [(0, ValueError), (1.5, TypeError)]),
    "op_execute_timeout": (None, 30, [(0, ValueError), ("30", TypeError)]),
}

# Options that need a partner option for a non-default value to be valid.
PARTNERS = {
    "modify_mixlist": {"precision_mode": "allow_mix_precision"},
    "optypelist_for_implmode": {"op_select_implmode": "high_precision"},
    "local_device_list": {"local_rank_id": 0},
}


def _resolve(value, files):
    if callable(value) and not isinstance(value, type):
        return value(files)
    if value == "proto":
        import tensorflow as tf
        return tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    if value == "ps":
        return PS()
    return value


def test_every_documented_option_is_in_the_table_and_tested():
    assert set(OPTIONS) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_default(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a default config warns about nothing
        config = NPURunConfig()
    assert getattr(config, name) == CASES[name][0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_non_default_value(name, files, monkeypatch):
    value = _resolve(CASES[name][1], files)
    if name == "distribute":
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["localhost:1"], "worker": ["localhost:2"]},
                                                    "task": {"type": "worker", "index": 0}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = NPURunConfig(**{name: value}, **PARTNERS.get(name, {}))
    stored = getattr(config, name)
    if name in ("graph_memory_max_size", "variable_memory_max_size"):
        assert stored == int(value)  # numeric strings are stored as ints
    else:
        assert stored == value


INVALID = [(name, index) for name in sorted(CASES) for index in range(len(CASES[name][2]))]


@pytest.mark.parametrize("name,index", INVALID)
def test_invalid_value_names_option_and_value(name, index, files):
    value, error = CASES[name][2][index]
    value = _resolve(value, files)
    with pytest.raises(error) as caught:
        NPURunConfig(**{name: value})
    assert type(caught.value) is not ValueError or error is ValueError
    if error is ValueError:
        assert not isinstance(caught.value, TypeError)
    message = str(caught.value)
    assert f"'{name}'" in message
    assert "allowed" in message


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="device_fn"):
        NPURunConfig(device_fn=lambda op: "")
    with pytest.raises(TypeError, match="protocol"):
        NPURunConfig(protocol="grpc")


def test_attributes_are_read_only_and_replace_revalidates():
    config = NPURunConfig(iterations_per_loop=10, save_checkpoints_steps=20)
    with pytest.raises(AttributeError, match="replace"):
        config.iterations_per_loop = 5
    changed = config.replace(iterations_per_loop=5)
    assert (changed.iterations_per_loop, changed.save_checkpoints_steps) == (5, 20)
    assert config.iterations_per_loop == 10
    with pytest.raises(ValueError, match="iterations_per_loop"):
        config.replace(iterations_per_loop=0)
    # replace starts from the given arguments, so switching to secs is not a conflict with the
    # derived default of 100 steps
    assert NPURunConfig().replace(save_checkpoints_secs=60).save_checkpoints_steps is None


def test_signature_lists_every_option_with_its_default():
    import inspect
    parameters = inspect.signature(NPURunConfig).parameters
    assert list(parameters) == list(CASES)
    assert parameters["iterations_per_loop"].default == 1
    assert parameters["op_compiler_cache_mode"].default == "disable"


@pytest.mark.parametrize("name", sorted(n for n, o in OPTIONS.items() if o.kind.name != "EFFECT" or o.pending))
def test_options_without_effect_here_warn_when_set(name, files, monkeypatch):
    value = _resolve(CASES[name][1], files)
    if name == "distribute":
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["localhost:1"], "worker": ["localhost:2"]},
                                                    "task": {"type": "worker", "index": 0}}))
    with pytest.warns(UserWarning, match=f"'{name}'"):
        NPURunConfig(**{name: value}, **PARTNERS.get(name, {}))


def test_a_wrongly_typed_value_is_caught_as_typeerror_and_as_valueerror():
    # adapter-era scripts catch ValueError for a sub-config of the wrong type
    from npurun import NPURunConfig
    from npurun.config.errors import OptionTypeError

    for catch in (TypeError, ValueError):
        with pytest.raises(catch) as info:
            NPURunConfig(dump_config="x")
        assert isinstance(info.value, OptionTypeError) and "dump_config" in str(info.value)
