"""tf.estimator conformance: Keras layers built in model_fn restore across train, evaluate, predict
and export, each of which builds model_fn in a graph of its own (the TensorFlow custom-Estimator
tutorial's pattern). Keras 3 (tf.keras since TensorFlow 2.16) counts layer names per process, not
per graph as tf.estimator's Keras did."""
import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator, ServingInputReceiver

v1 = tf.compat.v1
rng = np.random.RandomState(0)
Y = rng.randint(0, 3, 240)
X = (rng.normal(size=(240, 4)) + Y[:, None] * 1.5).astype("float32")


def input_fn(training):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return (dataset.shuffle(240, seed=1).repeat() if training else dataset).batch(32)


def serving_input_fn():
    x = v1.placeholder(tf.float32, [None, 4], name="x")
    return ServingInputReceiver({"x": x}, {"x": x})


def model_fn_with(layers):
    def model_fn(features, labels, mode, params):
        net = features["x"]
        for units in params["hidden_units"]:
            net = layers.Dense(units, activation=tf.nn.relu)(net)
        logits = layers.Dense(3)(net)
        classes = tf.argmax(logits, 1)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions={"class_ids": classes})
        loss = v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(mode, loss=loss,
                                 eval_metric_ops={"accuracy": v1.metrics.accuracy(labels, classes)})
        train_op = v1.train.AdagradOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)
    return model_fn


@pytest.mark.parametrize("layers", [keras.layers, tf_keras.layers, tf.keras.layers], ids=["keras3", "tf_keras", "tf.keras"])
def test_keras_layers_in_model_fn_restore_in_evaluate_predict_and_export(tmp_path, layers):
    keras.backend.clear_session()  # whatever Keras 3 named before in this process must not matter
    keras.layers.Dense(2)  # ... nor a layer built outside model_fn: the process counter is at "dense_1"
    est = NPUEstimator(model_fn_with(layers), model_dir=str(tmp_path / "model"),
                       params={"hidden_units": [16, 8]})
    est.train(lambda: input_fn(True), steps=200)
    kernels = [n for n, _ in tf.train.list_variables(est.latest_checkpoint()) if n.endswith("kernel")]
    assert len(kernels) == 3, kernels
    result = est.evaluate(lambda: input_fn(False))  # a new graph: same names, so the checkpoint restores
    assert result["global_step"] == 200 and result["accuracy"] > 0.8
    predicted = np.array([p["class_ids"] for p in est.predict(lambda: input_fn(False))])
    assert np.mean(predicted == Y) == pytest.approx(result["accuracy"], abs=1e-6)
    trained = est.get_variable_value(kernels[-1])
    est.train(lambda: input_fn(True), steps=10)  # and training resumes from it, in a graph of its own again
    assert est.get_variable_value("global_step") == 210
    assert not np.array_equal(est.get_variable_value(kernels[-1]), trained)
    exported = est.export_saved_model(str(tmp_path / "export"), serving_input_fn)
    served = tf.saved_model.load(exported.decode() if isinstance(exported, bytes) else exported)
    outputs = served.signatures["serving_default"](x=tf.constant(X))
    now = np.array([p["class_ids"] for p in est.predict(lambda: input_fn(False))])
    np.testing.assert_array_equal(outputs["class_ids"].numpy(), now)
