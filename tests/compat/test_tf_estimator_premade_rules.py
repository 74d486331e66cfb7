"""tf.estimator 2.15's rules for the premade estimators, heads and their helpers, as npurun keeps them: found by
running tensorflow/estimator's own tests of them against npurun (the harness is outside the repo; see
docs/tf_estimator.md). Each test is written here, cheap and in-process."""
import numpy as np
import pytest
import tensorflow as tf

from npurun.estimator import parsing

v1 = tf.compat.v1


def test_parse_spec_takes_tf2_only_columns_and_refuses_a_weight_that_is_a_feature():
    # tf.estimator.classifier_parse_example_spec is TF 2's: a sequence column (no TF 1 form) is parsed
    spec = parsing.classifier_parse_example_spec([tf.feature_column.sequence_numeric_column("a")], "b")
    assert spec == {"a": tf.io.VarLenFeature(tf.float32), "b": tf.io.FixedLenFeature((1,), tf.int64)}
    spec = parsing.regressor_parse_example_spec([tf.feature_column.sequence_numeric_column("a")], "b")
    assert spec["b"] == tf.io.FixedLenFeature((1,), tf.float32)
    with pytest.raises(ValueError, match="weight_column should not be used as feature"):
        parsing.classifier_parse_example_spec([tf.feature_column.numeric_column("a")], "b",
                                              weight_column=tf.feature_column.numeric_column("a"))
    with pytest.raises(ValueError, match="weight_column should not be used as feature"):
        parsing.regressor_parse_example_spec([tf.feature_column.numeric_column("a")], "b", weight_column="a")


def test_queue_runner_inputs_are_started_for_train_evaluate_and_predict(tmp_path):
    # TF 1 input pipelines (a QueueRunner feeding a FIFOQueue) are started as MonitoredSession started them
    from npurun.tf_estimator.canned import BaselineRegressor

    def input_fn():
        queue = tf.queue.FIFOQueue(capacity=10, dtypes=[tf.float32, tf.float32])
        v1.train.queue_runner.add_queue_runner(v1.train.queue_runner.QueueRunner(
            queue, [queue.enqueue([tf.constant([[1.], [2.]]), tf.constant([[3.], [5.]])])]))
        x, y = queue.dequeue()
        x.set_shape([2, 1])
        y.set_shape([2, 1])
        return {"x": x}, y

    from npurun import NPURunConfig

    # a dequeue that nothing feeds fails after 30 s instead of hanging the suite
    estimator = BaselineRegressor(config=NPURunConfig(model_dir=str(tmp_path), op_wait_timeout=30), optimizer="SGD")
    estimator.train(input_fn, steps=3)
    assert estimator.get_variable_value("global_step") == 3
    assert estimator.evaluate(input_fn, steps=2)["global_step"] == 3
    predictions = estimator.predict(input_fn)
    assert next(predictions)["predictions"].shape == (1,)
    predictions.close()
