"""tf.estimator conformance: Keras metric objects in eval_metric_ops, and EstimatorSpec's checks."""
import numpy as np
import pytest
import tensorflow as tf

import npurun
from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator

v1 = tf.compat.v1
X = np.arange(12, dtype="float32").reshape(6, 2)
Y = np.array([1, 0, 1, 1, 0, 1], dtype="float32")


def _input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(2)


def _model_fn(features, labels, mode):
    w = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer([[0.1], [-0.05]]))
    logits = tf.reshape(tf.matmul(features["x"], w), [-1])
    loss = tf.reduce_mean(tf.square(logits - labels))
    if mode == ModeKeys.EVAL:
        mean = tf.keras.metrics.Mean(name="mean_logit")
        mean.update_state(logits)
        auc = tf.keras.metrics.AUC(name="auc")
        auc.update_state(labels, tf.sigmoid(logits))
        acc = tf.keras.metrics.BinaryAccuracy()
        acc.update_state(labels, tf.sigmoid(logits))
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "mean_logit": mean, "auc": auc, "accuracy": acc, "v1_mean": v1.metrics.mean(logits)})
    train_op = v1.assign_add(v1.train.get_global_step(), 1)
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def _expected():
    logits = X @ np.array([0.1, -0.05], dtype="float32")
    probabilities = 1 / (1 + np.exp(-logits))
    return logits, probabilities


@pytest.fixture
def estimator(make_config, model_dir):
    est = NPUEstimator(_model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=1))
    est.train(_input_fn, steps=1)
    return est


def test_keras_metric_objects_evaluate_to_their_numbers(estimator):
    logits, probabilities = _expected()
    result = estimator.evaluate(_input_fn)
    assert result["mean_logit"] == pytest.approx(logits.mean(), rel=1e-5)
    assert result["v1_mean"] == pytest.approx(logits.mean(), rel=1e-5)
    assert result["accuracy"] == pytest.approx(np.mean((probabilities > 0.5) == (Y > 0.5)))
    reference = tf.keras.metrics.AUC()  # eager, the same data: the same number
    reference.update_state(Y, probabilities)
    assert result["auc"] == pytest.approx(float(reference.result()), rel=1e-5)


def test_keras_metrics_start_from_zero_in_every_evaluate(estimator):
    logits, _ = _expected()
    first = estimator.evaluate(_input_fn, steps=1)
    second = estimator.evaluate(_input_fn, steps=1)
    assert first["mean_logit"] == pytest.approx(logits[:2].mean(), rel=1e-5)
    assert second["mean_logit"] == pytest.approx(first["mean_logit"])


def test_keras_metric_variables_are_not_checkpointed(estimator):
    estimator.evaluate(_input_fn)
    names = estimator.get_variable_names()
    assert "w" in names and not any("mean_logit" in n or "auc" in n for n in names)


def test_keras_metric_without_update_state_is_an_error():
    with tf.Graph().as_default():
        metric = tf.keras.metrics.Mean(name="never_updated")
        with pytest.raises(ValueError, match='Please call update_state'):
            EstimatorSpec(ModeKeys.EVAL, loss=tf.constant(1.0), eval_metric_ops={"m": metric})


def _graph_spec(**kwargs):
    with tf.Graph().as_default():
        return EstimatorSpec(**kwargs)


def test_spec_messages_keep_tf_estimator_wording():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="Missing train_op"):
            EstimatorSpec(ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="Missing loss"):
            EstimatorSpec(ModeKeys.EVAL)
        with pytest.raises(ValueError, match="Missing predictions"):
            EstimatorSpec(ModeKeys.PREDICT)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            EstimatorSpec(ModeKeys.EVAL, loss=tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="loss must be Tensor"):
            EstimatorSpec(ModeKeys.EVAL, loss="x")
        with pytest.raises(TypeError, match="train_op must be Operation or Tensor"):
            EstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op="minimize")
        with pytest.raises(TypeError, match="Values of eval_metric_ops must be"):
            EstimatorSpec(ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": loss})
        with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
            EstimatorSpec(ModeKeys.EVAL, loss=loss, evaluation_hooks=["not a hook"])
        with pytest.raises(TypeError, match="scaffold must be tf.train.Scaffold"):
            EstimatorSpec(ModeKeys.EVAL, loss=loss, scaffold=object())
    with tf.Graph().as_default():
        other = tf.constant(2.0)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be from the default graph"):
            EstimatorSpec(ModeKeys.EVAL, loss=other)


def test_spec_fields_in_tf_estimator_order():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        op = tf.no_op()
        hook = v1.train.StopAtStepHook(last_step=1)
        spec = EstimatorSpec(ModeKeys.TRAIN, None, loss, op, None, None, [hook])
        assert spec.training_chief_hooks == (hook,) and spec.training_hooks == ()
        assert npurun.NPUEstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op=op).training_chief_hooks == ()


def test_predict_specs_get_default_export_outputs():
    from npurun.estimator.export_output import ClassificationOutput, PredictOutput

    with tf.Graph().as_default():
        scores = tf.constant([[0.2, 0.8]])
        spec = EstimatorSpec(ModeKeys.PREDICT, predictions={"scores": scores})
        assert list(spec.export_outputs) == ["serving_default"]
        assert spec.export_outputs["serving_default"].outputs == {"scores": scores}
        head = ClassificationOutput(scores=scores)
        spec = EstimatorSpec(ModeKeys.PREDICT, predictions=scores, export_outputs={"head": head})
        assert spec.export_outputs == {"head": head, "serving_default": head}
        with pytest.raises(ValueError, match="none of them is specified as the default"):
            EstimatorSpec(ModeKeys.PREDICT, predictions=scores,
                          export_outputs={"a": head, "b": PredictOutput(scores)})
        with pytest.raises(TypeError, match="Values in `export_outputs` must be ExportOutput"):
            EstimatorSpec(ModeKeys.PREDICT, predictions=scores, export_outputs={"a": scores})


def test_add_metrics_adds_keras_metrics_to_evaluation(estimator):
    from npurun.estimator.add_metrics import add_metrics

    def metric_fn(labels, features):
        total = tf.keras.metrics.Sum()
        total.update_state(labels)
        return {"label_sum": total, "feature_mean": v1.metrics.mean(features["x"])}

    extended = add_metrics(estimator, metric_fn)
    assert type(extended) is type(estimator) and extended.model_dir == estimator.model_dir
    result = extended.evaluate(_input_fn)
    assert result["label_sum"] == pytest.approx(Y.sum())
    assert result["feature_mean"] == pytest.approx(X.mean())
    assert result["mean_logit"] == pytest.approx(estimator.evaluate(_input_fn)["mean_logit"])
    with pytest.raises(ValueError, match="has following not expected args"):
        add_metrics(estimator, lambda labels, weights: {})


def test_warm_start_settings_select_and_rename(make_config, tmp_path):
    from npurun.estimator.warm_start import WarmStartSettings

    source = NPUEstimator(_model_fn, model_dir=str(tmp_path / "source"), config=make_config())
    source.train(_input_fn, steps=1)
    trained = source.get_variable_value("w")

    def renamed_model_fn(features, labels, mode):
        v = v1.get_variable("v", [2, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.matmul(features["x"], v)) * 0.0
        return EstimatorSpec(mode, loss=loss, train_op=v1.assign_add(v1.train.get_global_step(), 1))

    target = NPUEstimator(renamed_model_fn, model_dir=str(tmp_path / "target"), config=make_config(),
                          warm_start_from=WarmStartSettings(str(tmp_path / "source"), vars_to_warm_start=["v"],
                                                            var_name_to_prev_var_name={"v": "w"}))
    target.train(_input_fn, steps=1)
    np.testing.assert_array_equal(target.get_variable_value("v"), trained)
    nothing = NPUEstimator(renamed_model_fn, model_dir=str(tmp_path / "nothing"), config=make_config(),
                           warm_start_from=WarmStartSettings(str(tmp_path / "source"), vars_to_warm_start=None))
    nothing.train(_input_fn, steps=1)
    np.testing.assert_array_equal(nothing.get_variable_value("v"), np.zeros([2, 1]))
