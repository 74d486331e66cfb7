"""A TF 2-era tf.estimator script (Keras metric objects, export outputs, bytes export paths), run
unchanged by TensorFlow 2.15's own tf.estimator and by `npurun run`; prints one JSON line of what it
observed (tests/compat/test_tf_estimator_oracle.py compares the two)."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
rng = np.random.RandomState(0)
X = rng.randn(64, 3).astype("float32")
Y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype("int32")


def input_fn(repeat=True):
    def fn():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
        return (dataset.repeat() if repeat else dataset).batch(16)
    return fn


def model_fn(features, labels, mode, params):
    w = v1.get_variable("w", [3, 2], initializer=v1.constant_initializer(0.1))
    b = v1.get_variable("b", [2], initializer=v1.zeros_initializer())
    logits = tf.matmul(features["x"], w) + b
    probs = tf.nn.softmax(logits)
    classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"classes": classes, "probs": probs}, export_outputs={
            "classify": tf.estimator.export.PredictOutput({"probs": probs})})
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
        accuracy.update_state(labels, probs)
        auc = tf.keras.metrics.AUC()
        auc.update_state(tf.one_hot(labels, 2), probs)
        precision = tf.keras.metrics.Precision()
        precision.update_state(labels, classes)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "acc": accuracy, "auc": auc, "prec": precision, "v1acc": v1.metrics.accuracy(labels, classes)})
    train_op = v1.train.GradientDescentOptimizer(0.5).minimize(loss, v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_receiver_fn():
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


model_dir = tempfile.mkdtemp()
config = tf.estimator.RunConfig(save_checkpoints_steps=5, tf_random_seed=1)
estimator = tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config, params={})
estimator.train(input_fn(), steps=12)
observed = {}
observed["eval"] = {k: float(v) for k, v in estimator.evaluate(input_fn(False)).items()}
observed["eval2"] = {k: float(v) for k, v in estimator.evaluate(input_fn(False), steps=2, name="two").items()}
observed["ckpts"] = sorted(int(name.split("-")[-1].split(".")[0]) for name in os.listdir(model_dir)
                           if name.endswith(".index"))
predictions = list(estimator.predict(input_fn(False)))
observed["npred"] = len(predictions)
observed["pred0"] = {k: np.round(v, 5).tolist() for k, v in predictions[0].items()}
path = estimator.export_saved_model(os.fsencode(os.path.join(model_dir, "exp")), serving_input_receiver_fn)
observed["exp_type"] = type(path).__name__
loaded = tf.saved_model.load(path.decode())
observed["sigs"] = sorted(loaded.signatures)
observed["served"] = np.round(loaded.signatures["serving_default"](x=tf.constant(X[:2]))["probs"].numpy(), 5).tolist()
# npurun's checkpoints also hold the input pipeline's position (docs/tf_estimator.md)
observed["vars"] = sorted(name for name in estimator.get_variable_names() if "Iterator" not in name)
observed["config_model_dir"] = estimator.config.model_dir == model_dir
print("RESULT " + json.dumps(observed, sort_keys=True))
