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


# ResNet50_OSME_ID1257's model_resnet50_with_OSME.py (8 folders import it): standalone Keras 2's
# `keras.applications.resnet50`, a tiny head on it, compiled on the NPU session.
KERAS_APPLICATION_SCRIPT = '''\
from npu_bridge.npu_init import *
import tensorflow as tf
from tensorflow.python.keras import backend as K
from keras.applications.resnet50 import ResNet50, preprocess_input
from keras.models import Model
from keras.layers import Input, Dense, GlobalAveragePooling2D

sess_config = tf.ConfigProto()
custom_op = sess_config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
sess = tf.Session(config=sess_config)
K.set_session(sess)

input_tensor = Input(shape=(32, 32, 3))
base_model = ResNet50(weights=None, include_top=False, input_tensor=input_tensor)
prediction = Dense(3, activation="softmax")(GlobalAveragePooling2D()(base_model.output))
model = Model(inputs=base_model.input, outputs=prediction)
print("application", ResNet50.__name__, callable(preprocess_input), model.output_shape)
'''


def test_keras2_application_module_by_file_name(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(KERAS_APPLICATION_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "application ResNet50 True (None, 3)" in done.stdout, done.stdout[-2000:]
