"""Small patterns found by running real ModelZoo-TensorFlow scripts unmodified under `npurun run`
(docs/compat.md, "Real ModelZoo scripts"); each failed before its fix."""

import numpy as np
import pytest
import tensorflow as tf

from npurun import NPUEstimator, NPURunConfig
from npurun.estimator import EstimatorSpec

v1 = tf.compat.v1


class _LossByNameHook(v1.train.SessionRunHook):
    """ALBERT-lcqmc's run_classifier logs the loss with a hook fetching it by name."""

    def __init__(self, name):
        self.name, self.seen = name, []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(fetches=[v1.train.get_global_step(), self.name])

    def after_run(self, run_context, run_values):
        self.seen.append(tuple(run_values.results))


def _classifier_model_fn(features, labels, mode):
    weights = v1.get_variable("output_weights", [2, 3], initializer=v1.truncated_normal_initializer(stddev=0.02))
    logits = tf.matmul(features["x"], weights, transpose_b=True)
    with v1.variable_scope("loss"):
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        per_example_loss = -tf.reduce_sum(tf.one_hot(labels, 2) * log_probs, axis=-1)
        loss = tf.reduce_mean(per_example_loss, name="total_loss")
        tf.identity(per_example_loss, name="per_example")
    train_op = v1.train.AdamOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8, drop_remainder=True)


def _estimator(tmp_path):
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=4, save_checkpoints_steps=100,
                          log_step_count_steps=None)
    return NPUEstimator(_classifier_model_fn, config=config)


def test_a_hook_fetching_the_loss_by_name_gets_the_loss_in_a_device_loop(tmp_path):
    hook = _LossByNameHook("loss/total_loss:0")
    _estimator(tmp_path).train(_input_fn, max_steps=40, hooks=[hook])
    steps = [step for step, _ in hook.seen]
    losses = [loss for _, loss in hook.seen]
    assert len(hook.seen) == 10 and steps == sorted(steps)  # one run per loop of 4 steps
    assert losses[-1] < 0.5 * losses[0]


def test_a_hook_fetching_another_loop_tensor_by_name_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="_LossByNameHook fetches loss/per_example.*inside the device loop"):
        _estimator(tmp_path).train(_input_fn, max_steps=8, hooks=[_LossByNameHook("loss/per_example:0")])
