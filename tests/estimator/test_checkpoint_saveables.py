"""Checkpoints hold the graph's SAVEABLE_OBJECTS (as tf.compat.v1.train.Saver does by default), also when they
hold the input position: a checkpointed MutableHashTable filled in training is there when predicting."""
import numpy as np
import tensorflow as tf

from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator

v1 = tf.compat.v1
IDS = np.arange(8, dtype="int64")


def _input_fn():
    return tf.data.Dataset.from_tensor_slices(({"id": IDS}, np.ones(8, "float32"))).repeat().batch(4)


def _model_fn(features, labels, mode):
    seen = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=-1.0, name="seen")
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"value": seen.lookup(features["id"])})
    w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(w - labels))
    with tf.control_dependencies([seen.insert(features["id"], tf.cast(features["id"], tf.float32) * 10)]):
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_saveable_objects_are_checkpointed_with_the_input_position(make_config, model_dir):
    est = NPUEstimator(_model_fn, model_dir=model_dir, config=make_config())
    est.train(_input_fn, steps=2)
    names = [name for name, _ in tf.train.list_variables(model_dir)]
    assert {"seen-keys", "seen-values", "w", "global_step"} <= set(names)
    assert any(name.endswith("_STATE") for name in names)  # the input position is there too
    predicted = [p["value"] for p in est.predict(lambda: tf.data.Dataset.from_tensor_slices({"id": IDS}).batch(8))]
    np.testing.assert_allclose(predicted, IDS * 10.0)
