"""Resources a model_fn registers with `resources.register_resource` (TF 1 contrib code, e.g. TensorForest and
OpenSeq2Seq's, does) are initialised as tf.train.Scaffold's default init_op / local_init_op did: shared ones
with the variables when nothing is restored, local ones in every session."""
import numpy as np
import tensorflow as tf
from tensorflow.python.ops import resources

from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator

v1 = tf.compat.v1


def _input_fn():
    x = np.ones([8, 1], np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x)).repeat().batch(4)


def _registered_counter(name, shared):
    """A resource variable known only through the RESOURCES collections (no tf.Variable wraps it)."""
    handle = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[], shared_name=name, name=name)
    create = tf.raw_ops.AssignVariableOp(resource=handle, value=tf.constant(5.0))
    resources.register_resource(handle, create, tf.raw_ops.VarIsInitializedOp(resource=handle), is_shared=shared)
    return handle


def _model_fn(features, labels, mode):
    shared = _registered_counter("shared_counter", True) if mode == ModeKeys.TRAIN else None
    local = _registered_counter("local_counter", False)
    w = v1.get_variable("w", [1, 1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    if mode == ModeKeys.EVAL:
        value = tf.raw_ops.ReadVariableOp(resource=local, dtype=tf.float32)
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={"local": v1.metrics.mean(value)})
    bump = tf.raw_ops.AssignAddVariableOp(resource=shared, value=tf.constant(1.0))
    with tf.control_dependencies([bump]):
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_registered_resources_are_initialised_in_training_and_evaluation(make_config, model_dir):
    est = NPUEstimator(_model_fn, model_dir=model_dir, config=make_config())
    # before: FailedPreconditionError "Could not find variable shared_counter" in the first training step
    est.train(_input_fn, steps=3)
    # evaluation restores the variables and initialises local resources (shared ones are the checkpoint's,
    # through their saveables, as with tf.train.Scaffold)
    assert est.evaluate(_input_fn, steps=1)["local"] == 5.0
