"""Small models and inputs shared by the Estimator tests (fast: a few ms per step)."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from npurun.estimator import EstimatorSpec, ModeKeys

v1 = tf.compat.v1
FEATURES = 4
CLASSES = 3


def make_data(n=96, seed=0):
    """Separable-ish 3-class data: x float32 [n, 4], y int32 [n]."""
    rng = np.random.RandomState(seed)
    x = rng.randn(n, FEATURES).astype("float32")
    y = (np.argmax(x[:, :CLASSES] + 0.3 * rng.randn(n, CLASSES), axis=1)).astype("int32")
    return x, y


def input_fn_for(x, y=None, batch=8, repeat=True, shuffle=False, seed=None):
    """An input_fn returning a Dataset of ({'x': ...}, y) (or features only when y is None)."""
    def input_fn():
        element = {"x": x} if y is None else ({"x": x}, y)
        dataset = tf.data.Dataset.from_tensor_slices(element)
        if shuffle:
            dataset = dataset.shuffle(len(x), seed=seed)
        if repeat:
            dataset = dataset.repeat()
        return dataset.batch(batch)
    return input_fn


def linear_logits(x):
    w = v1.get_variable("linear/w", [FEATURES, CLASSES])
    b = v1.get_variable("linear/b", [CLASSES], initializer=v1.zeros_initializer())
    return tf.matmul(x, w) + b


def model_fn(features, labels, mode, params):
    """Linear softmax classifier; params: learning_rate (0.1), dropout (None)."""
    x = features["x"]
    if params.get("dropout") and mode == ModeKeys.TRAIN:
        x = tf.nn.dropout(x, rate=params["dropout"])
    logits = linear_logits(x)
    classes = tf.argmax(logits, 1, output_type=tf.int32)
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"classes": classes, "logits": logits,
                                                "probabilities": tf.nn.softmax(logits)})
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": v1.metrics.accuracy(labels, classes),
            "mean_max_prob": v1.metrics.mean(tf.reduce_max(tf.nn.softmax(logits), axis=1))})
    optimizer = v1.train.GradientDescentOptimizer(params.get("learning_rate", 0.1))
    return EstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(loss, global_step=v1.train.get_global_step()))


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class LossRecorder(v1.train.SessionRunHook):
    """Records (global step after the run, loss) of every training run."""

    def __init__(self):
        self.losses = []
        self.steps = []

    def begin(self):
        self._loss = v1.get_collection(v1.GraphKeys.LOSSES)[0]
        self._step = v1.train.get_global_step()

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results))


def checkpoint_steps(model_dir):
    """Steps of the checkpoints present in model_dir (by their index files), sorted."""
    import glob
    import os
    import re
    steps = []
    for path in glob.glob(os.path.join(model_dir, "model.ckpt-*.index")):
        steps.append(int(re.search(r"-(\d+)\.index$", path).group(1)))
    return sorted(steps)
