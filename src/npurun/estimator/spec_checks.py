"""The checks EstimatorSpec applies to what model_fn returns, as tf.estimator applies them.

Messages start with tf.estimator's wording ("Missing loss.", "Loss must be scalar, given: ...",
"... must be from the default graph.") so code and habits that match on it keep working, then
say what to do.
"""
from __future__ import annotations

import tensorflow as tf

from .mode_keys import ModeKeys

_v1 = tf.compat.v1


def _is_tensor(value) -> bool:
    # A SparseTensor is not a Tensor for EstimatorSpec (tf.estimator's rule: loss and predictions are dense).
    if isinstance(value, (tf.SparseTensor, _v1.SparseTensorValue)):
        return False
    return isinstance(value, tf.Tensor) or (tf.is_tensor(value) and hasattr(value, "graph"))


def _tensor_or_operation(value, what):
    if not (isinstance(value, tf.Operation) or _is_tensor(value)):
        raise TypeError(f"{what} must be Operation or Tensor, given: {value!r}")


def _in_default_graph(value, what):
    graph = getattr(value, "graph", None)
    if graph is not None and graph is not _v1.get_default_graph():
        raise ValueError(f"{what} with \"{getattr(value, 'name', value)}\" must be from the default graph: it was "
                         f"created outside model_fn's graph, or in an earlier call of model_fn")


def train_op(value, mode):
    if value is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op. EstimatorSpec in TRAIN mode needs a train_op (e.g. "
                             "optimizer.minimize(loss, global_step=...))")
        return None
    _tensor_or_operation(value, "train_op")
    _in_default_graph(value, "train_op")
    return value


def loss(value, mode):
    if value is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError(f"Missing loss. EstimatorSpec in {mode.upper()} mode needs a scalar loss tensor")
        return None
    if not _is_tensor(value):
        raise TypeError(f"loss must be Tensor, given: {value!r} (a scalar tensor computed from the model)")
    if value.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {value} (shape {value.shape})")
    if value.shape.rank not in (None, 0):
        value = tf.reshape(value, [])
    _in_default_graph(value, "loss")
    return value


def predictions(value, mode):
    if value is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions. EstimatorSpec in PREDICT mode needs predictions (a tensor or a "
                             "dict of tensors)")
        return {}
    items = value.items() if isinstance(value, dict) else [(None, value)]
    for key, tensor in items:
        what = "predictions" if key is None else f"predictions[{key}]"
        if not _is_tensor(tensor):
            raise TypeError(f"{what} must be Tensor, given: {tensor!r}")
        _in_default_graph(tensor, "prediction values")
    return value


def eval_metric_ops(value):
    """A dict of (value, update) pairs; Keras metric objects become pairs (keras_metrics.py)."""
    from . import keras_metrics

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {value!r}")
    pairs = {}
    for name, entry in value.items():
        if keras_metrics.is_metric(entry):
            pairs[name] = keras_metrics.as_pair(name, entry)
            continue
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) tuples, given: {entry!r} "
                            f"for key: {name} (a (value, update) pair from tf.compat.v1.metrics, or a tf.keras.metrics object whose "
                            f"update_state was called)")
        for member in tf.nest.flatten(entry[0]) + [entry[1]]:
            _tensor_or_operation(member, f"eval_metric_ops[{name}]")
            _in_default_graph(member, "eval_metric_ops")
        pairs[name] = tuple(entry)
    return pairs


def scaffold(value):
    if value is not None and not isinstance(value, _v1.train.Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {value!r}")
    return value
