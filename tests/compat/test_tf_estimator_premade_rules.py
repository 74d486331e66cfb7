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


# ---- tf.estimator.experimental.LinearSDCA ---------------------------------------------------------------
def _ridge_data():
    rng = np.random.RandomState(0)
    x = rng.randn(8, 2).astype("float32")
    y = (x @ np.array([1.5, -2.0], np.float32) + 0.5 + 0.1 * rng.randn(8)).astype("float32")
    return x, y


def test_sdca_regressor_reaches_the_ridge_solution_and_resumes_from_its_checkpoint(tmp_path):
    # SDCA minimises sum((y - x.w - b)^2) / 2 + l2 / 2 * |(w, b)|^2 (the bias is a feature of ones); over the
    # whole data set each step it converges to the closed-form ridge solution. Training stops and restarts
    # from the checkpoint halfway: the examples' dual state (a hash table) is checkpointed with the weights.
    from npurun.tf_estimator import canned
    from npurun.tf_estimator.experimental import LinearSDCA

    x, y = _ridge_data()
    ids = np.array([str(i) for i in range(8)])

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": x, "id": ids}, y[:, None])).repeat()

    def estimator():
        return canned.LinearRegressor([tf.feature_column.numeric_column("x", shape=(2,))], model_dir=str(tmp_path),
                                      optimizer=LinearSDCA("id", symmetric_l2_regularization=2.0))

    estimator().train(input_fn, steps=30)
    resumed = estimator()
    resumed.train(input_fn, steps=30)
    design = np.hstack([x, np.ones((8, 1), np.float32)])
    ridge = np.linalg.solve(design.T @ design + 2.0 * np.eye(3), design.T @ y)
    learned = np.append(resumed.get_variable_value("linear/linear_model/x/weights").ravel(),
                        resumed.get_variable_value("linear/linear_model/bias_weights"))
    np.testing.assert_allclose(learned, ridge, atol=2e-3)
    names = resumed.get_variable_names()
    assert resumed.get_variable_value("global_step") == 60
    assert "linear/linear_model/x/weights_unshrunk" in names and "sdca_state-values" in names


def test_sdca_classifier_with_sparse_columns_and_l1_shrinkage(tmp_path):
    # logistic loss on a categorical column that decides the label and one that is noise (each of its values
    # as often with either label): L1 shrinkage (l1 / l2 per step) leaves the noise column's weights exactly zero
    from npurun.tf_estimator import canned
    from npurun.tf_estimator.experimental import LinearSDCA

    index = np.arange(32)
    signal = (index // 4) % 2
    features = {"id": np.array([f"e{i}" for i in index]), "signal": signal.astype(np.int64),
                "noise": (index % 4).astype(np.int64)}
    columns = [tf.feature_column.categorical_column_with_identity("signal", 2),
               tf.feature_column.categorical_column_with_identity("noise", 4)]

    def input_fn():
        return tf.data.Dataset.from_tensors((features, signal[:, None])).repeat()

    classifier = canned.LinearClassifier(columns, model_dir=str(tmp_path), optimizer=LinearSDCA(
        "id", symmetric_l1_regularization=0.5, symmetric_l2_regularization=1.0))
    classifier.train(input_fn, steps=20)
    metrics = classifier.evaluate(input_fn, steps=1)
    assert metrics["accuracy"] == 1.0
    assert not np.any(classifier.get_variable_value("linear/linear_model/noise/weights"))
    signal_weights = classifier.get_variable_value("linear/linear_model/signal/weights").ravel()
    assert signal_weights[0] < 0 < signal_weights[1]


def test_sdca_refusals_name_what_is_allowed():
    from npurun.tf_estimator import canned
    from npurun.tf_estimator.experimental import LinearSDCA

    column = [tf.feature_column.numeric_column("x")]
    sdca = LinearSDCA("id")
    with pytest.raises(ValueError, match="multi-class"):
        canned.LinearClassifier(column, n_classes=3, optimizer=sdca)
    with pytest.raises(ValueError, match='sparse_combiner must be "sum"'):
        canned.LinearClassifier(column, sparse_combiner="mean", optimizer=sdca)
    with pytest.raises(ValueError, match="one-dimensional label"):
        canned.LinearRegressor(column, label_dimension=2, optimizer=sdca)
    with pytest.raises(ValueError, match="symmetric_l2_regularization must be > 0"):
        LinearSDCA("id", symmetric_l2_regularization=0.0)
