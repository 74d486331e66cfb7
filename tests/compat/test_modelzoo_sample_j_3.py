"""The fifth random sample (seed 2034), SparseNet_ID1616 and ResNet101_ID0063: the gaps the real scripts hit,
each in the style of the script that hit it; each test failed before its fix."""
import logging

import pytest

from .conftest import run_compat

# ResNet101_ID0063's r1/resnet (official models, `--dtype=fp16`): a tf.data pipeline tuned through
# `options.experimental_threading` (TF 1.15's name), a whole-model float16 graph with fused batch norms
# followed by ReLU, trained on a session.
FP16_RESNET_STYLE_SCRIPT = '''\
import numpy as np
import tensorflow as tf


def input_fn():
    images = np.random.RandomState(0).uniform(0, 255, (8, 16, 16, 3)).astype(np.float32)
    labels = np.arange(8, dtype=np.int32) % 4
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    options = tf.data.Options()
    options.experimental_threading.max_intra_op_parallelism = 1
    dataset = dataset.with_options(options)
    return dataset.repeat().batch(4, drop_remainder=True)


def model(images, training):
    inputs = tf.cast(images, tf.float16)
    inputs = tf.layers.conv2d(inputs, 8, 3, padding='same', use_bias=False)
    inputs = tf.layers.batch_normalization(inputs, fused=True, training=training)
    inputs = tf.nn.relu(inputs)
    inputs = tf.reduce_mean(inputs, [1, 2])
    return tf.cast(tf.layers.dense(inputs, 4), tf.float32)


images, labels = tf.data.make_one_shot_iterator(input_fn()).get_next()
logits = model(images, training=True)
loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(2):
        _, value = sess.run([train_op, loss])
        print("step %d loss %.4f" % (step, value))
'''

# What TensorFlow 2.21 prints per float16 batch norm when grappler's remapper proposes its GPU-only fusion on
# the CPU (one block of ResNet101's 134).
FUSED_BATCH_NORM_BLOCK = (
    b"W0000 00:00:1796408827.484096   32716 graph_view.cc:850] No registered '_FusedBatchNormEx' OpKernel for CPU "
    b"devices compatible with node {{node resnet_model/batch_normalization_3/FusedBatchNormV3}}\n"
    b"\t (OpKernel was found, but attributes didn't match) Requested Attributes: T=DT_HALF, U=DT_FLOAT, "
    b"activation_mode=\"Relu\", data_format=\"NHWC\", epsilon=1e-05, is_training=true, num_side_inputs=0\n"
    b"\t.  Registered:  device='XLA_CPU_JIT'; U in [DT_FLOAT]; T in [DT_FLOAT, DT_BFLOAT16, DT_HALF]\n"
    b"  device='CPU'; T in [DT_BFLOAT16]; U in [DT_FLOAT]\n"
    b"  device='CPU'; T in [DT_FLOAT]; U in [DT_FLOAT]\n"
    b"  device='GPU'; T in [DT_HALF]; U in [DT_FLOAT]\n"
    b"\n")


@pytest.fixture(scope="module")
def fp16_resnet_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resnet101")
    (folder / "imagenet_main.py").write_text(FP16_RESNET_STYLE_SCRIPT)
    # the user's environment: no TF_CPP_MIN_LOG_LEVEL (run_compat's 2 would hide TensorFlow's WARNING lines)
    return run_compat("run", "imagenet_main.py", cwd=folder, env={"TF_CPP_MIN_LOG_LEVEL": None})


def test_fp16_resnet_style_script_trains(fp16_resnet_run):
    assert fp16_resnet_run.returncode == 0, fp16_resnet_run.stderr[-3000:]
    assert "step 1 loss " in fp16_resnet_run.stdout


def test_tf1_name_experimental_threading_gets_no_tf2_deprecation_notice(fp16_resnet_run):
    assert "experimental_threading is deprecated" not in fp16_resnet_run.stderr


def test_grapplers_rejected_float16_fusion_is_not_printed(fp16_resnet_run):
    assert "_FusedBatchNormEx" not in fp16_resnet_run.stderr, fp16_resnet_run.stderr[-3000:]
    assert "Registered:" not in fp16_resnet_run.stderr and "device='CPU'" not in fp16_resnet_run.stderr


def test_the_rejected_fusion_block_is_dropped_whole_and_what_follows_kept():
    from npurun._native_stderr import LineFilter

    lines = LineFilter(min_level=1, has_nvidia_device=False)
    block = FUSED_BATCH_NORM_BLOCK
    passed = b"".join(lines.feed(part) for part in (block[:120], block[120:300], block[300:] + block, b"step 1\n"))
    assert passed == b"step 1\n"
    assert LineFilter(min_level=0, has_nvidia_device=False).feed(block) == block, "-v: everything"
    # an op of the script's own (no leading underscore) without a kernel stays
    own = b"W0000 00:00:1 1 graph_view.cc:850] No registered 'MyOp' OpKernel for CPU devices compatible with node x\n"
    assert LineFilter(min_level=1, has_nvidia_device=False).feed(own) == own


def test_npuruns_own_captures_drop_the_block_whole_too():
    from npurun import logs

    text = (FUSED_BATCH_NORM_BLOCK + b"W0000 00:00:1 1 x.cc:2] kept\n").decode()
    assert logs._kept_native_lines(text.splitlines(keepends=True), 1) == ["W0000 00:00:1 1 x.cc:2] kept\n"]


def test_the_notice_is_dropped_for_tf1_scripts_only():
    from absl import logging as absl_logging

    from npurun.tf1 import world

    record = logging.LogRecord("absl", logging.WARNING, __file__, 1, "options.experimental_threading is deprecated. "
                               "Use options.threading instead.", (), None)
    absl_logger = absl_logging.get_absl_logger()
    assert isinstance(absl_logger, absl_logging.ABSLLogger), "absl's own logger, not a plain one made first"
    for tf1 in (True, False):
        tf1_world = world.TF1World(graph_mode=True, scripts_get_tf1=tf1)
        tf1_world.install()
        try:
            assert bool(absl_logger.filter(record)) != tf1, "dropped for a TF 1 script, kept for a TF 2 one"
        finally:
            tf1_world.uninstall()
        assert absl_logger.filter(record), "uninstalled"
