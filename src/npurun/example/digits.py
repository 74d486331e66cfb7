"""The bundled example: an MLP classifying the 8x8 handwritten digits (offline, ~1800 images; the
copy scikit-learn ships, bundled in data/, so no scikit-learn is needed).

`run_example(config, train_steps)` trains an NPUEstimator, evaluates it on a held-out fifth of the
data and exports a SavedModel; on a 2-core CPU it reaches > 0.9 accuracy in a few seconds.
The pieces (`model_fn`, `input_fn`, `serving_input_receiver_fn`) are the usual Estimator
functions and work with any NPURunConfig.
"""
from __future__ import annotations

import gzip
import os
from typing import Optional

import numpy as np
import tensorflow as tf

from .. import safe_files
from ..estimator import (EstimatorSpec, ModeKeys, NPUEstimator, build_raw_serving_input_receiver_fn)

_v1 = tf.compat.v1
PIXELS = 64
CLASSES = 10
FEATURE = "pixels"


def load_digits(split: str):
    """(pixels scaled to [0, 1] as float32 [N, 64], labels int32 [N]) of the 'train' or 'test' split.

    A fixed permutation puts 80% of the images in 'train' and the rest in 'test'.
    """
    pixels, labels = _digits()
    order = np.random.RandomState(0).permutation(len(labels))
    cut = int(0.8 * len(order))
    chosen = order[:cut] if split == "train" else order[cut:]
    return (pixels[chosen] / 16.0).astype("float32"), labels[chosen].astype("int32")


def _digits():
    """(pixels [1797, 64] in 0..16, labels [1797]) from the bundled copy (data/README.md)."""
    path = os.path.join(os.path.dirname(__file__), "data", "digits.csv.gz")
    with gzip.open(path, "rt") as handle:
        table = np.loadtxt(handle, delimiter=",")
    return table[:, :-1], table[:, -1].astype(int)


def input_fn(mode, params):
    """The train split shuffled and repeated for TRAIN; the test split once otherwise."""
    training = mode == ModeKeys.TRAIN
    pixels, labels = load_digits("train" if training else "test")
    dataset = tf.data.Dataset.from_tensor_slices(({FEATURE: pixels}, labels))
    if training:
        dataset = dataset.shuffle(len(labels), seed=params.get("seed", 0)).repeat()
    return dataset.batch(params.get("batch_size", 64), drop_remainder=training)


def model_fn(features, labels, mode, params):
    """MLP 64 -> hidden (relu) -> 10 with Adam; accuracy as the eval metric."""
    hidden = params.get("hidden", 64)
    x = features[FEATURE]
    w1 = _v1.get_variable("hidden/kernel", [PIXELS, hidden], initializer=_v1.glorot_uniform_initializer())
    b1 = _v1.get_variable("hidden/bias", [hidden], initializer=_v1.zeros_initializer())
    w2 = _v1.get_variable("logits/kernel", [hidden, CLASSES], initializer=_v1.glorot_uniform_initializer())
    b2 = _v1.get_variable("logits/bias", [CLASSES], initializer=_v1.zeros_initializer())
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    classes = tf.argmax(logits, axis=1, output_type=tf.int32)
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"classes": classes, "probabilities": tf.nn.softmax(logits)})
    loss = _v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": _v1.metrics.accuracy(labels, classes)})
    optimizer = _v1.train.AdamOptimizer(params.get("learning_rate", 0.01))
    train_op = optimizer.minimize(loss, global_step=_v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_receiver_fn():
    """Serve a float32 batch of flattened images under the input name 'pixels'."""
    return build_raw_serving_input_receiver_fn({FEATURE: tf.TensorSpec([None, PIXELS], tf.float32)})()


def run_example(config=None, train_steps: int = 600, model_dir: Optional[str] = None,
                export_dir: Optional[str] = None, params: Optional[dict] = None) -> dict:
    """Train on the digits for `train_steps` steps (a total: a resumed run continues to it), evaluate
    on the test split, export a SavedModel.

    Args:
      config: an npurun.NPURunConfig (None: defaults); its model_dir is used unless `model_dir`
        is given (the two must not differ, as for NPUEstimator).
      train_steps: the global step to train to; with iterations_per_loop N it must be a multiple of N.
      model_dir: checkpoints and summaries; None: the config's, or a new model_dir_XXXXXXXXXX.
      export_dir: where the timestamped SavedModel goes; None: `<model_dir>/export`.
      params: overrides of batch_size (64), hidden (64), learning_rate (0.01), seed (0).

    Returns: {"accuracy", "loss", "global_step", "model_dir", "export_path"}.
    """
    estimator = NPUEstimator(model_fn, model_dir=model_dir, config=config, params=dict(params or {}))
    estimator.train(input_fn, max_steps=train_steps)
    metrics = estimator.evaluate(input_fn)
    # The default `<model_dir>/export` is npurun's name: created here, refused when it is a planted link.
    export_path = estimator.export_saved_model(
        export_dir or safe_files.make_dirs_under(estimator.model_dir, "export", "export folder"),
        serving_input_receiver_fn)
    return {"accuracy": float(metrics["accuracy"]), "loss": float(metrics["loss"]),
            "global_step": int(metrics["global_step"]), "model_dir": estimator.model_dir,
            "export_path": export_path}
