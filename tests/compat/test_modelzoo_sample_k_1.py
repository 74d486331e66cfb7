"""The sixth random sample (seed 2036), first two folders: gaps their real scripts hit, each in the style of the
script that hit it; each test failed before its fix."""

import pytest

# GFLmser's GFLmser.py: `from tensorflow.python.compat import compat` and every batch normalization of its residual
# blocks built inside `compat.forward_compatibility_horizon(2019, 5, 1)` (the `tf.compat.` spelling is the other
# ModelZoo form), a GAN-style pair of Adam optimizers over variable-scope collections, trained by feed_dict in a
# session with an NpuOptimizer custom_op.
HORIZON_SCRIPT = '''\
import numpy as np
import tensorflow as tf
from tensorflow.python.compat import compat
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig


def block(x, planes, training):
    with compat.forward_compatibility_horizon(2019, 5, 1):
        out = tf.layers.batch_normalization(x, training=training)
    out = tf.layers.conv2d(tf.nn.relu(out), filters=planes, kernel_size=3, padding="same", use_bias=False)
    with tf.compat.forward_compatibility_horizon(2019, 5, 1):
        out = tf.layers.batch_normalization(out, training=training)
        inside = compat.forward_compatible(2020, 1, 1)
    return out + tf.layers.conv2d(x, filters=planes, kernel_size=1), inside


images = tf.placeholder(tf.float32, [2, 8, 8, 3])
training = tf.placeholder(tf.bool)
with tf.variable_scope("generator", reuse=tf.AUTO_REUSE):
    out, inside = block(images, 4, training)
    out, _ = block(out, 4, training)
with tf.variable_scope("critic", reuse=tf.AUTO_REUSE):
    score = tf.layers.dense(tf.reshape(out, (2, -1)), units=1)
g_loss = tf.reduce_mean(tf.square(out - images[..., :1]))
d_loss = tf.reduce_mean(tf.square(score - 1.0))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    g_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(
        g_loss, var_list=tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="generator"))
    d_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(
        d_loss, var_list=tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="critic"))

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    feed = {images: np.random.RandomState(0).rand(2, 8, 8, 3).astype("float32"), training: True}
    for step in range(2):
        _, g = sess.run([g_op, g_loss], feed)
        _, d = sess.run([d_op, d_loss], feed)
    print("trained", step + 1, "finite", bool(np.isfinite(g) and np.isfinite(d)), "horizon is 2.21's", inside)
'''


@pytest.fixture(scope="module")
def horizon_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("horizon")
    (tmp_path / "main_li.py").write_text(HORIZON_SCRIPT)
    return run_compat("run", tmp_path / "main_li.py", cwd=tmp_path)


def test_past_forward_compatibility_horizon_is_quiet(horizon_run):
    """TF 1.15 took a past horizon silently; TensorFlow 2.21 ignores it (its ops run the same on CPU) and warns at
    every entry: under `npurun run` that warning is not printed, and the script trains."""
    assert horizon_run.returncode == 0, horizon_run.stderr[-3000:]
    assert "trained 2 finite True horizon is 2.21's True" in horizon_run.stdout, horizon_run.stdout[-2000:]
    assert "forward compatibility date" not in horizon_run.stderr, horizon_run.stderr[-3000:]
