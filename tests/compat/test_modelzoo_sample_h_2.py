"""The fourth random sample (seed 2032), second half: gaps its real scripts hit, each in the style of the script
that hit it; each test failed before its fix."""

import pytest

# MEAN-TEACHER_ID0789's weight_norm.py: a weight-normalized conv whose scale and bias are initialized from the
# statistics of a first batch, reading the direction variable through `initialized_value()` (24 folders call it).
WEIGHT_NORM_INIT_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf


def wn_conv2d(inputs, num_outputs, init, scope):
    with tf.variable_scope(scope, reuse=not init):
        V = tf.get_variable("V", [3, 3, int(inputs.get_shape()[-1]), num_outputs], tf.float32,
                            tf.random_normal_initializer(0, 0.05))
        if init:
            V_norm = tf.nn.l2_normalize(V.initialized_value(), [0, 1, 2])
            x_init = tf.nn.conv2d(inputs, V_norm, [1, 1, 1, 1], "SAME")
            m_init, v_init = tf.nn.moments(x_init, [0, 1, 2])
            scale_init = 1.0 / tf.sqrt(v_init + 1e-8)
            g = tf.get_variable("g", dtype=tf.float32, initializer=scale_init)
            b = tf.get_variable("b", dtype=tf.float32, initializer=-m_init * scale_init)
            return tf.reshape(scale_init, [1, 1, 1, num_outputs]) * (x_init - tf.reshape(m_init, [1, 1, 1, num_outputs]))
        g, b = tf.get_variable("g"), tf.get_variable("b")
        W = tf.reshape(g, [1, 1, 1, num_outputs]) * tf.nn.l2_normalize(V, [0, 1, 2])
        return tf.nn.bias_add(tf.nn.conv2d(inputs, W, [1, 1, 1, 1], "SAME"), b)


images = tf.placeholder(tf.float32, [4, 8, 8, 3])
initialized = wn_conv2d(images, 5, init=True, scope="conv_1")
trained = wn_conv2d(images, 5, init=False, scope="conv_1")
with tf.variable_scope("conv_1", reuse=True):
    V = tf.get_variable("V")
V_value = V.initialized_value()
batch = np.random.RandomState(0).rand(4, 8, 8, 3).astype(np.float32)
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer(), feed_dict={images: batch})
    out = sess.run(trained, feed_dict={images: batch})
    mean, std = out.mean(axis=(0, 1, 2)), out.std(axis=(0, 1, 2))
    sess.run(V.assign(tf.ones_like(V)))
    print("normalized", np.allclose(mean, 0, atol=1e-4), np.allclose(std, 1, atol=1e-3),
          "after assign", float(sess.run(V_value).min()))
'''


@pytest.fixture(scope="module")
def weight_norm_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("weight_norm")
    (tmp_path / "train.py").write_text(WEIGHT_NORM_INIT_SCRIPT)
    return run_compat("run", tmp_path / "train.py", cwd=tmp_path)


def test_initialized_value_for_data_dependent_init(weight_norm_run):
    assert weight_norm_run.returncode == 0, weight_norm_run.stderr[-3000:]
    assert "normalized True True after assign 1.0" in weight_norm_run.stdout, weight_norm_run.stdout[-2000:]
