"""The NpuOptimizer parameter map: options -> map -> options is the identity, and a ConfigProto
written by hand the way Ascend sess.run scripts write it gives the same options as the
equivalent constructor call."""
import json
import warnings

import pytest

from npurun import DumpConfig, NPURunConfig, ProfilingConfig
from npurun.config import OPTIONS, param_map

from .test_options import CASES, PARTNERS, _resolve, files  # noqa: F401  (fixture)

# Options that are not NpuOptimizer parameters: RunConfig's own, and Python objects.
NOT_IN_MAP = {"model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
              "save_checkpoints_secs", "session_config", "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
              "log_step_count_steps", "train_distribute", "eval_distribute", "distribute"}


def test_exactly_the_runconfig_and_object_options_are_outside_the_map():
    assert {name for name, o in OPTIONS.items() if o.codec is None} == NOT_IN_MAP


@pytest.mark.parametrize("name", sorted(set(CASES) - NOT_IN_MAP))
def test_round_trip_is_identity(name, files):  # noqa: F811
    value = _resolve(CASES[name][1], files)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = NPURunConfig(**{name: value}, **PARTNERS.get(name, {}))
    entries = config.to_parameter_map()
    decoded = param_map.decode(entries)
    assert decoded[name] == config.options[name]
    # and every encoded option decodes to its own value
    for other, decoded_value in decoded.items():
        assert decoded_value == config.options[other], other


def test_round_trip_through_a_real_config_proto(files):  # noqa: F811
    import tensorflow as tf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = NPURunConfig(iterations_per_loop=10, precision_mode="allow_mix_precision_bf16",
                              graph_memory_max_size=str(3 * 1024 ** 3), hcom_parallel=True,
                              dump_config=DumpConfig(enable_dump=True, dump_path=files["dir"], dump_step="0|5|10-20"),
                              profiling_config=ProfilingConfig(True, json.dumps({"output": files["dir"]})))
    proto = tf.compat.v1.ConfigProto()
    param_map.add_npu_optimizer(proto, config.options)
    restored = tf.compat.v1.ConfigProto.FromString(proto.SerializeToString())
    decoded = param_map.options_from_config_proto(restored)
    for name in set(OPTIONS) - NOT_IN_MAP:
        assert decoded.get(name, OPTIONS[name].default) == config.options[name], name


def test_hand_written_config_proto_equals_constructor_call(tmp_path):
    import tensorflow as tf
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    # As in Ascend's sess.run migration guide.
    proto = tf.compat.v1.ConfigProto()
    custom_op = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["iterations_per_loop"].i = 10
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
    custom_op.parameter_map["mix_compile_mode"].b = False
    custom_op.parameter_map["graph_memory_max_size"].s = tf.compat.as_bytes(str(26 * 1024 * 1024 * 1024))
    custom_op.parameter_map["enable_dump"].b = True
    custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes(str(tmp_path))
    custom_op.parameter_map["dump_step"].s = tf.compat.as_bytes("0|5|10")
    custom_op.parameter_map["dump_mode"].s = tf.compat.as_bytes("all")
    custom_op.parameter_map["hccl_timeout"].i = 600
    proto.graph_options.rewrite_options.remapping = RewriterConfig.OFF

    from_proto = param_map.options_from_config_proto(proto)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_hand = NPURunConfig(session_config=proto)
        by_keywords = NPURunConfig(iterations_per_loop=10, precision_mode="allow_mix_precision",
                                   graph_memory_max_size=str(26 * 1024 ** 3), hccl_timeout=600,
                                   dump_config=DumpConfig(enable_dump=True, dump_path=str(tmp_path),
                                                          dump_step="0|5|10", dump_mode="all"))
    assert from_proto["iterations_per_loop"] == 10
    for name in set(OPTIONS) - NOT_IN_MAP:
        assert by_hand.options[name] == by_keywords.options[name], name


def test_keyword_arguments_win_over_the_proto_with_a_warning():
    import tensorflow as tf
    proto = tf.compat.v1.ConfigProto()
    param_map.add_npu_optimizer(proto, {"iterations_per_loop": 10})
    with pytest.warns(UserWarning, match="iterations_per_loop"):
        config = NPURunConfig(session_config=proto, iterations_per_loop=5)
    assert config.iterations_per_loop == 5


def test_invalid_values_in_a_hand_written_proto_are_rejected_like_keywords():
    import tensorflow as tf
    proto = tf.compat.v1.ConfigProto()
    custom_op = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["precision_mode"].s = b"fp8"
    with pytest.raises(ValueError, match="'precision_mode'"):
        NPURunConfig(session_config=proto)
    custom_op.parameter_map["precision_mode"].s = b"force_fp16"
    custom_op.parameter_map["iterations_per_loop"].s = b"10"  # wrong field
    with pytest.raises(ValueError, match=r"iterations_per_loop.*\.i"):
        NPURunConfig(session_config=proto)


def test_unknown_parameter_keys_warn():
    with pytest.warns(UserWarning, match="no_such_key"):
        param_map.decode({"no_such_key": ("b", True), "use_off_line": ("b", True)})


def test_strip_removes_only_the_npu_entry():
    import tensorflow as tf
    proto = tf.compat.v1.ConfigProto()
    other = proto.graph_options.rewrite_options.custom_optimizers.add()
    other.name = "SomethingElse"
    param_map.add_npu_optimizer(proto, {"iterations_per_loop": 3})
    param_map.strip_npu_optimizer(proto)
    assert [c.name for c in proto.graph_options.rewrite_options.custom_optimizers] == ["SomethingElse"]
