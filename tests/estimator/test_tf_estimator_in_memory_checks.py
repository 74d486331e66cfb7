"""tf.estimator conformance: InMemoryEvaluatorHook refuses what it cannot carry to the evaluation, up front."""
import numpy as np
import pytest
import tensorflow as tf

from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator
from npurun.estimator.in_memory_evaluator import InMemoryEvaluatorHook

v1 = tf.compat.v1
X = np.arange(8, dtype="float32").reshape(4, 2)


def _input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, np.ones(4, "float32"))).batch(2)


def _model_fn_with(scaffold_fn=None, extra_saveable=False):
    def model_fn(features, labels, mode):
        w = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer(0.5))
        loss = tf.reduce_mean(tf.square(tf.reshape(tf.matmul(features["x"], w), [-1]) - labels))
        if extra_saveable:
            v1.Variable([0.0], trainable=False, collections=[v1.GraphKeys.SAVEABLE_OBJECTS])
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, v1.train.get_global_step())
        scaffold = scaffold_fn() if scaffold_fn and mode == ModeKeys.EVAL else None
        return EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold)
    return model_fn


@pytest.mark.parametrize("scaffold_fn, message", [
    (lambda: v1.train.Scaffold(saver=v1.train.Saver()), "does not support custom saver"),
    (lambda: v1.train.Scaffold(init_fn=lambda scaffold, session: None), "does not support custom init_fn"),
])
def test_an_evaluation_scaffold_with_its_own_saver_or_init_fn_is_refused_at_begin(tmp_path, scaffold_fn, message):
    estimator = NPUEstimator(_model_fn_with(scaffold_fn), model_dir=str(tmp_path))
    hook = InMemoryEvaluatorHook(estimator, _input_fn)
    with pytest.raises(ValueError, match=message):
        hook.begin()


def test_saveables_other_than_global_variables_are_refused_before_any_evaluation(tmp_path):
    estimator = NPUEstimator(_model_fn_with(extra_saveable=True), model_dir=str(tmp_path))
    hook = InMemoryEvaluatorHook(estimator, _input_fn, every_n_iter=1)
    with pytest.raises(ValueError, match="does not support saveables other than global variables"):
        estimator.train(_input_fn, hooks=[hook], steps=2)
    assert hook.results == []


def test_a_plain_model_is_evaluated_before_during_and_after_training(tmp_path):
    estimator = NPUEstimator(_model_fn_with(), model_dir=str(tmp_path))
    hook = InMemoryEvaluatorHook(estimator, _input_fn, every_n_iter=2)
    estimator.train(_input_fn, hooks=[hook], steps=2)
    assert [result["global_step"] for result in hook.results] == [0, 2, 2]


def test_in_memory_evaluations_name_no_checkpoint_path(tmp_path):
    """Their checkpoint is a private temporary one (tf.estimator writes no checkpoint_path for them);
    an ordinary evaluate() names the checkpoint it evaluated."""
    import glob
    import os

    estimator = NPUEstimator(_model_fn_with(), model_dir=str(tmp_path))
    estimator.train(_input_fn, hooks=[InMemoryEvaluatorHook(estimator, _input_fn, every_n_iter=2)], steps=2)

    def tags():
        return {value.tag for path in glob.glob(os.path.join(estimator.eval_dir(), "events.out.tfevents.*"))
                for event in v1.train.summary_iterator(path) for value in event.summary.value}

    assert "loss" in tags() and "checkpoint_path" not in tags()
    estimator.evaluate(_input_fn)
    assert "checkpoint_path" in tags()
