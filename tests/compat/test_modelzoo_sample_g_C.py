"""Issue 23's third random sample (seed 2028), part C and the late re-runs: gaps their real scripts hit, each in
the style of the script that hit it (docs/compat.md, "Third random sample (seed 2028)"); each test failed before
its fix.
"""
import pytest

# WaveGlow_ID0024's / ID0317's glow.py: the mel local conditions upsampled to the audio's length by two
# transposed 1-D convolutions, `tf.contrib.nn.conv1d_transpose(..., strides=)` (TF 1.15's is tf.nn's; 2 folders).
CONV1D_TRANSPOSE_SCRIPT = '''\
import numpy as np
import tensorflow as tf


def create_variable(name, shape):
    return tf.get_variable(name, shape=shape, initializer=tf.glorot_uniform_initializer(seed=1))


def upsample_lc(lc_batch, channels=6, stride1=4, stride2=2):
    with tf.variable_scope("upsample"):
        lc_shape = tf.shape(lc_batch)
        batch_size, lc_length, input_lc_dim = lc_shape[0], lc_shape[1], 5
        filter1 = create_variable("layer1", [3, channels, input_lc_dim])
        output_shape = [batch_size, lc_length * stride1, channels]
        lc_batch = tf.nn.relu(tf.contrib.nn.conv1d_transpose(lc_batch, filter1, output_shape, strides=stride1))
        lc_shape = tf.shape(lc_batch)
        filter2 = create_variable("layer2", [3, channels, channels])
        output_shape = [lc_shape[0], lc_shape[1] * stride2, channels]
        lc_batch = tf.contrib.nn.conv1d_transpose(lc_batch, filter2, output_shape, strides=stride2, padding="SAME")
        return tf.nn.relu(lc_batch)


lc = tf.placeholder(tf.float32, [None, None, 5])
upsampled = upsample_lc(lc)
loss = tf.reduce_mean(tf.square(upsampled - 1.0))
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    value, _ = sess.run([upsampled, train_op], {lc: np.random.rand(2, 7, 5).astype(np.float32)})
print("upsampled", value.shape)
'''


@pytest.fixture(scope="module")
def conv1d_transpose_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("waveglow")
    (folder / "glow.py").write_text(CONV1D_TRANSPOSE_SCRIPT)
    return run_compat("run", folder / "glow.py", cwd=folder), run_compat("check", folder / "glow.py", cwd=folder)


def test_contrib_nn_conv1d_transpose(conv1d_transpose_run):
    done, _ = conv1d_transpose_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert "upsampled (2, 56, 6)" in done.stdout, done.stdout[-2000:]


def test_check_knows_contrib_nn_conv1d_transpose(conv1d_transpose_run):
    _, check = conv1d_transpose_run
    assert "tensorflow.contrib.nn.conv1d_transpose -- provided" in check.stdout, check.stdout[-2000:]
    assert "0 will raise" in check.stdout, check.stdout[-2000:]
