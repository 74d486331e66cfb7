"""Issue 23's third random sample (seed 2028), part C: gaps its real scripts hit, each in the style of the
script that hit it (docs/compat.md, "Third random sample (seed 2028), part C"); each test failed before its fix.
"""
import warnings

import pytest

from npurun import NPURunConfig
from npurun.config.errors import OptionValueError


# SVD_ID2019's main_point_cloud_boostPerf.py (and 19 more folders): the per-op dtype file of the Ascend graph
# engine, next to a mixed-precision mode, in a run config built from its flags.
def test_customize_dtypes_file_is_accepted_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "switch_config.txt").write_text(
        "OpType::MatMulV2:InputDtype:float16,float16,float32,OutputDtype:float32\n"
        "OpType::BatchMatMul:InputDtype:float16,float16,OutputDtype:float32\n")
    save_summary_steps, save_checkpoints_steps, log_step_count = 250, 10000, 200
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = NPURunConfig(
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            log_step_count_steps=log_step_count,
            keep_checkpoint_max=None,
            precision_mode="allow_mix_precision",
            customize_dtypes="./switch_config.txt")
    assert config.customize_dtypes == "./switch_config.txt"
    assert any("customize_dtypes" in str(w.message) and "no effect" in str(w.message) for w in caught)


# NEURAL-STYLE_ID2068's stylize.py (and other sess.run scripts): the same file through the NpuOptimizer's
# parameter map, at the ModelArts path its job mounts; the file is not read here, so it need not exist.
def test_customize_dtypes_in_the_parameter_map_need_not_exist(tmp_path):
    import tensorflow as tf
    from npurun.config.param_map import options_from_config_proto

    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
    custom_op.parameter_map["customize_dtypes"].s = tf.compat.as_bytes(str(tmp_path / "data_url_0" / "switch_config.txt"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_config = NPURunConfig(**options_from_config_proto(config))
    assert run_config.customize_dtypes.endswith("switch_config.txt")
    assert any("customize_dtypes" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_customize_dtypes_refuses_a_non_path():
    with pytest.raises(TypeError, match="customize_dtypes"):
        NPURunConfig(precision_mode="allow_mix_precision", customize_dtypes=1)
