"""tf.estimator conformance: every evaluation of a process goes to one event file of the eval directory."""
import glob
import os

import numpy as np
import tensorflow as tf

from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator

v1 = tf.compat.v1
X = np.arange(8, dtype="float32").reshape(4, 2)


def _model_fn(features, labels, mode):
    w = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer(0.5))
    logits = tf.reshape(tf.matmul(features["x"], w), [-1])
    loss = tf.reduce_mean(tf.square(logits - labels))
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={"mean_logit": v1.metrics.mean(logits)})
    return EstimatorSpec(mode, loss=loss, train_op=v1.assign_add(v1.train.get_global_step(), 1))


def _input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, np.ones(4, "float32"))).batch(2)


def _events(path):
    """(step, metrics) of the metric events (each evaluation also writes its checkpoint_path event)."""
    return [(event.step, {value.tag: value.simple_value for value in event.summary.value})
            for event in v1.train.summary_iterator(path)
            if any(value.HasField("simple_value") for value in event.summary.value)]


def test_evaluations_of_a_process_share_one_event_file(tmp_path):
    estimator = NPUEstimator(_model_fn, model_dir=str(tmp_path))
    for _ in range(2):
        estimator.train(_input_fn, steps=1)
        estimator.evaluate(_input_fn)
    files = glob.glob(os.path.join(estimator.eval_dir(), "events.out.tfevents.*"))
    assert len(files) == 1
    mean_logit = float(np.mean(X @ np.array([0.5, 0.5], "float32")))
    assert [(step, values["mean_logit"]) for step, values in _events(files[0])] == \
        [(1, mean_logit), (2, mean_logit)]


def test_a_removed_event_file_is_started_again(tmp_path):
    estimator = NPUEstimator(_model_fn, model_dir=str(tmp_path))
    estimator.train(_input_fn, steps=1)
    estimator.evaluate(_input_fn)
    for path in glob.glob(os.path.join(estimator.eval_dir(), "*")):
        os.remove(path)
    estimator.evaluate(_input_fn)
    files = glob.glob(os.path.join(estimator.eval_dir(), "events.out.tfevents.*"))
    assert len(files) == 1 and [step for step, _ in _events(files[0])] == [1]
