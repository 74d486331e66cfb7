"""Patterns of the random sample's real ModelZoo-TensorFlow scripts (docs/compat.md, "Round 2", issue 23,
second half of the sample) that npurun did not run; each test failed before its fix."""

import numpy as np
import tensorflow as tf

from npurun import NPUEstimator, NPURunConfig
from npurun.estimator import EstimatorSpec
from npurun.tf1.hparams import HParams  # what a script's tf.contrib.training.HParams is under npurun run

from .test_modelzoo_patterns import _input_fn

v1 = tf.compat.v1


def _standard_model_fn(model_fn):
    """RFN_ID0212's utils1.standard_model_fn: the Estimator's params are the script's HParams."""

    def _model_fn(features, labels, mode, params):
        loss = model_fn(features, labels, mode, params)
        optimizer = v1.train.GradientDescentOptimizer(params.learning_rate)
        train_op = optimizer.minimize(loss, global_step=v1.train.get_or_create_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    return _model_fn


def _rfn_model_fn(features, labels, mode, hparams):
    weights = v1.get_variable("w", [3, hparams.num_classes], initializer=v1.zeros_initializer())
    logits = tf.matmul(features["x"], weights)
    return v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)


def test_params_may_be_contrib_training_hparams(tmp_path):
    hparams = HParams(learning_rate=0.1, num_classes=2)
    config = NPURunConfig(model_dir=str(tmp_path), save_checkpoints_steps=10, log_step_count_steps=None)
    estimator = NPUEstimator(model_dir=str(tmp_path), model_fn=_standard_model_fn(_rfn_model_fn), params=hparams,
                             config=config)
    estimator.train(input_fn=_input_fn, max_steps=3)
    assert estimator.get_variable_value("global_step") == 3
    assert estimator.params.learning_rate == 0.1 and estimator.params is not hparams  # a copy, as tf.estimator's


def test_contrib_estimator_clip_gradients_by_norm_clips_to_the_global_norm():
    # RFN_ID0212's utils1: `optimizer = tf.contrib.estimator.clip_gradients_by_norm(optimizer, clip_norm)`
    from npurun.tf1.contrib import module_for

    contrib_estimator = module_for("tensorflow.contrib.estimator")
    graph = tf.Graph()
    with graph.as_default():
        w = v1.get_variable("w", initializer=tf.constant([3.0, 4.0]))
        loss = tf.reduce_sum(10.0 * w)  # gradient (10, 10): global norm 14.14
        optimizer = contrib_estimator.clip_gradients_by_norm(v1.train.GradientDescentOptimizer(1.0), 1.0)
        (gradient, variable), = optimizer.compute_gradients(loss)
        train_op = optimizer.minimize(loss, global_step=v1.train.get_or_create_global_step())
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            assert variable is w and abs(float(np.linalg.norm(sess.run(gradient))) - 1.0) < 1e-5
            sess.run(train_op)
            np.testing.assert_allclose(sess.run(w), [3.0 - 0.5 ** 0.5, 4.0 - 0.5 ** 0.5], rtol=1e-5)


EMA_GETTER_SCRIPT = '''\
import functools
from npu_bridge.npu_init import *
import tensorflow as tf


def getter_ema(ema, getter, name, *args, **kwargs):
    """mixmatch_ID0804's libml/utils.getter_ema"""
    var = getter(name, *args, **kwargs)
    ema_var = ema.average(var)
    return ema_var if ema_var else var


def classifier(x):
    return tf.layers.dense(x, 2, name="dense", kernel_initializer=tf.ones_initializer())


x = tf.ones([1, 3])
with tf.variable_scope("classify"):
    logits = classifier(x)
ema = tf.train.ExponentialMovingAverage(decay=0.5)
ema_op = ema.apply(tf.trainable_variables())
with tf.variable_scope("classify", reuse=True, custom_getter=functools.partial(getter_ema, ema)):
    ema_logits = classifier(x)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("logits", sess.run(logits).tolist(), sess.run(ema_logits).tolist())
'''


def test_a_custom_getter_testing_a_variables_truth_works_in_a_graph(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(EMA_GETTER_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "logits [[3.0, 3.0]] [[3.0, 3.0]]" in done.stdout, done.stdout[-2000:]


def test_tensorflow_1_libraries_get_tensorflow_1_as_the_script_does(tmp_path):
    # InsightFace_TF: `import tensorlayer as tl` (1.11, TF 1 code) reads tf.GraphKeys inside the library;
    # 12 folders use tensorlayer, tflearn, tensorpack or sonnet. A TF 2 release of one (sonnet 2) keeps TF 2.
    from .conftest import run_compat

    site = tmp_path / "lib" / "site-packages"
    for package, distribution, version, body in (
            ("tensorlayer", "tensorlayer", "1.11.1",
             "import tensorflow as tf\nKEYS = tf.GraphKeys.TRAINABLE_VARIABLES\n"
             "def dense(x, units):\n    return tf.layers.dense(x, units)\n"),
            ("sonnet", "dm_sonnet", "2.0.2", "import tensorflow as tf\nTF1 = hasattr(tf, 'GraphKeys')\n")):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text(body)
        info = site / f"{distribution}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution.replace('_', '-')}\n"
                                       f"Version: {version}\n")
    (tmp_path / "train_nets.py").write_text(
        f"import sys\nsys.path.insert(0, {str(site)!r})\n"
        "import tensorflow as tf\nfrom npu_bridge.npu_init import *\nimport tensorlayer as tl\nimport sonnet as snt\n"
        "x = tf.placeholder(tf.float32, [None, 3])\ny = tl.dense(x, 2)\n"
        "print('keys', tl.KEYS, 'vars', len(tf.get_collection(tl.KEYS)), 'sonnet_tf1', snt.TF1)\n")
    done = run_compat("run", tmp_path / "train_nets.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-6:] == ["keys", "trainable_variables", "vars", "2", "sonnet_tf1", "False"]
