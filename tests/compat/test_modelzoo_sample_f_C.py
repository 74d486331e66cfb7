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


# White_Box_Cartoonization_ID2089's train_code/train.py (up to 19 folders build two or more managers in a file
# that merges all summaries): a GAN whose generator and discriminator each get an NPULossScaleOptimizer with its
# own ExponentialUpdateLossScaleManager, the summaries merged with merge_all and run with the discriminator's step;
# before the fix MergeSummary refused the second manager's duplicate `loss_scale` tag.
TWO_MANAGERS_SCRIPT = r'''
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf


def train():
    input_photo = tf.placeholder(tf.float32, [2, 4])
    with tf.variable_scope("generator"):
        output = tf.layers.dense(input_photo, 4)
    with tf.variable_scope("discriminator"):
        score = tf.layers.dense(output, 1)
    g_loss_total = tf.reduce_mean((score - 1.0) ** 2)
    d_loss_total = tf.reduce_mean(score ** 2)
    tf.summary.scalar("g_loss_total", g_loss_total)
    tf.summary.scalar("d_loss_total", d_loss_total)
    all_vars = tf.trainable_variables()
    gene_vars = [var for var in all_vars if "gene" in var.name]
    disc_vars = [var for var in all_vars if "disc" in var.name]

    loss_scale_manager_g = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 32, incr_every_n_steps=1000,
                                                             decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    loss_scale_manager_d = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 32, incr_every_n_steps=1000,
                                                             decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    g_optim = tf.train.AdamOptimizer(2e-4, beta1=0.5, beta2=0.99)
    g_optim = NPULossScaleOptimizer(g_optim, loss_scale_manager_g).minimize(g_loss_total, var_list=gene_vars)
    d_optim = tf.train.AdamOptimizer(2e-4, beta1=0.5, beta2=0.99)
    d_optim = NPULossScaleOptimizer(d_optim, loss_scale_manager_d).minimize(d_loss_total, var_list=disc_vars)
    summary_op = tf.summary.merge_all()
    lossScale = tf.get_default_graph().get_tensor_by_name("loss_scale:0")

    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        photo_batch = np.ones([2, 4], np.float32)
        l_s_g, _ = sess.run([lossScale, g_optim], feed_dict={input_photo: photo_batch})
        l_s_d, _, train_info = sess.run([lossScale, d_optim, summary_op], feed_dict={input_photo: photo_batch})
        tags = sorted(value.tag for value in tf.Summary.FromString(train_info).value)
        print("tags", ",".join(tags))
        print("scales", float(l_s_g) == float(l_s_d) == 2.0 ** 32)


if __name__ == "__main__":
    train()
'''


def test_two_loss_scale_managers_and_merge_all(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(TWO_MANAGERS_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("tags "))
    tags = line.split()[1].split(",")
    assert len(tags) == len(set(tags)), tags
    assert {"loss_scale", "loss_scale_skipped_steps", "loss_scale_1", "g_loss_total", "d_loss_total"} <= set(tags), tags
    assert "scales True" in done.stdout, done.stdout[-2000:]
