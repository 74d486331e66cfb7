"""Issue 23's random sample, part a: gaps its real scripts hit, each in the style of the script that hit it.

One `npurun run` subprocess runs one script with a section per gap (each prints its own line or the error it
raised), so the gaps cost one start-up of TensorFlow together.
"""
import pytest

SAMPLE_A_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf


def section(name, body):
    try:
        body()
    except Exception as error:  # each section reports its own failure; the others still run
        print(name, "raised", type(error).__name__, error)


# Densenet_3D_ID0121's train.py (and 20 other folders): the Keras of TF 1.15's private path, bound by
# `import ... as`, next to `from tensorflow.python.keras... import ...`.
def keras_import_as():
    import tensorflow.python.keras as keras
    import tensorflow.python.keras.backend as K
    from tensorflow.python.keras.backend import learning_phase
    from tensorflow.python.keras.layers import concatenate, Conv3D

    labels = np.array([[0, 2], [1, 4]])
    one_hot = keras.utils.to_categorical(labels, num_classes=5)
    flags = keras.utils.to_categorical(np.copy(labels).astype(dtype=np.bool), num_classes=2)
    print("keras_as", one_hot.shape, one_hot[1, 1].tolist(), flags.shape, K is tf.keras.backend or K.__name__,
          learning_phase is K.learning_phase, keras.layers.Conv3D is Conv3D)


section("keras_as", keras_import_as)


# AlignedReID_ID1460's RES.py (and 3 other files): TF 1.15's slim namespace had TensorFlow's variable_scope module.
def slim_variable_scope():
    from tensorflow.contrib import slim
    import tensorflow.contrib.slim as slim_too
    from tensorflow.contrib.slim.nets import resnet_v1
    from tensorflow.contrib.slim.python.slim import learning

    features = tf.placeholder(tf.float32, [2, 6])
    with slim.variable_scope.variable_scope("ball", reuse=None):
        weights = slim.model_variable("mean_vectors", (6, 3), initializer=tf.truncated_normal_initializer(stddev=1e-3),
                                      regularizer=None)
        scale = slim.model_variable("scale", (), tf.float32, initializer=tf.constant_initializer(0., tf.float32),
                                    regularizer=slim.l2_regularizer(1e-1))
    logits = tf.nn.softplus(scale) * tf.matmul(features, tf.nn.l2_normalize(weights, dim=0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(logits, {features: np.ones([2, 6], np.float32)})
    print("slim_vs", weights.op.name, scale.op.name, out.shape, len(slim.get_model_variables("ball")),
          slim_too.variable_scope is slim.variable_scope, callable(slim.conv2d), resnet_v1.__name__,
          learning is slim.learning)


section("slim_vs", slim_variable_scope)


# EfficientNet_B0_ID0009's main_npu.py (10 files): imported at module level, used under --use_async_checkpointing.
def async_checkpointing():
    from tensorflow.contrib.tpu.python.tpu import async_checkpoint
    import os
    import tempfile

    model_dir = tempfile.mkdtemp()
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        train_op = tf.assign_add(step, 1)
        tf.Variable(1.0, name="w")
        hooks = [async_checkpoint.AsyncCheckpointSaverHook(checkpoint_dir=model_dir, save_steps=2)]
        with tf.train.MonitoredSession(hooks=hooks) as sess:
            for _ in range(3):
                sess.run(train_op)
    print("async_ckpt", os.path.basename(tf.train.latest_checkpoint(model_dir)))


section("async_ckpt", async_checkpointing)


# EfficientNet_B0_ID0009's main_npu.py (9 files): TF 1.15 estimator.py's private step reader.
def load_global_step():
    from tensorflow.python.estimator import estimator
    import tempfile

    model_dir = tempfile.mkdtemp()
    before = estimator._load_global_step_from_checkpoint_dir(model_dir)
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(step, 7))
            tf.train.Saver().save(sess, model_dir + "/model.ckpt", global_step=step)
    print("load_step", before, estimator._load_global_step_from_checkpoint_dir(model_dir),
          estimator.Estimator is tf.estimator.Estimator)


section("load_step", load_global_step)
'''


@pytest.fixture(scope="module")
def sample_a_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("sample_a")
    (folder / "train.py").write_text(SAMPLE_A_SCRIPT)
    done = run_compat("run", folder / "train.py", cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_import_tensorflow_python_keras_as_is_the_keras_of_tf_keras(sample_a_run):
    # TF 1.15's tensorflow.python.keras was tf.keras; TensorFlow 2.21's copy there has no utils.to_categorical
    assert "keras_as (2, 2, 5) [0.0, 0.0, 0.0, 0.0, 1.0] (2, 2, 2) tf_keras.src.backend True True" in sample_a_run, \
        sample_a_run[-2000:]


def test_slim_has_tf115s_variable_scope_module(sample_a_run):
    assert "slim_vs ball/mean_vectors ball/scale (2, 3) 2 True True tf_slim.nets.resnet_v1 True" in sample_a_run, \
        sample_a_run[-2000:]


def test_tpu_async_checkpoint_hook_saves_as_the_checkpoint_saver_hook(sample_a_run):
    # saves at step 0 (after creation), 2, and at the end (3)
    assert "async_ckpt model.ckpt-3" in sample_a_run, sample_a_run[-2000:]


def test_estimators_private_global_step_reader_of_tf115(sample_a_run):
    assert "load_step 0 7 True" in sample_a_run, sample_a_run[-2000:]
