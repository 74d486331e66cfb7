"""`tf.contrib.metrics`' own functions, with TF 1.15's signatures.

- `accuracy(predictions, labels, weights=None, name=None)` is contrib's *non-streaming* accuracy: one float32
  tensor, the (weighted) fraction of positions where `predictions == labels`, with no local variables and no
  update op. `tf.compat.v1.metrics.accuracy` is a different function (a streaming `(value, update_op)` pair over
  local variables), so the MAML family's per-task accuracies cannot be mapped onto it.
- The `streaming_*` metrics take `(predictions, labels, ...)`; their `tf.compat.v1.metrics` successors take
  `(labels, predictions, ...)` with the same remaining parameters, so positional calls are passed on swapped.
"""
from __future__ import annotations


def accuracy(predictions, labels, weights=None, name=None):
    """The fraction of `predictions` equal to `labels` (weighted by `weights`), a float32 scalar tensor."""
    import tensorflow.compat.v1 as tf

    predictions, labels = tf.convert_to_tensor(predictions), tf.convert_to_tensor(labels)
    if not (labels.dtype.is_integer or labels.dtype in (tf.bool, tf.string)):
        raise ValueError(f"tf.contrib.metrics.accuracy: labels must have a bool, integer or string dtype, "
                         f"not {labels.dtype.name}")
    if not labels.dtype.is_compatible_with(predictions.dtype):
        raise ValueError(f"tf.contrib.metrics.accuracy: predictions ({predictions.dtype.name}) and labels "
                         f"({labels.dtype.name}) must have the same dtype")
    with tf.name_scope(name, "accuracy", [predictions, labels]):
        is_correct = tf.cast(tf.equal(predictions, labels), tf.float32)
        if weights is None:
            return tf.reduce_mean(is_correct)
        weights = tf.cast(weights, tf.float32)
        is_correct = is_correct * weights
        return tf.reduce_sum(is_correct) / tf.reduce_sum(weights * tf.ones_like(is_correct))


def _predictions_first(name):
    def metric(predictions, labels, *args, **kwargs):
        import tensorflow.compat.v1 as tf

        return getattr(tf.metrics, name)(labels, predictions, *args, **kwargs)

    metric.__name__ = metric.__qualname__ = f"streaming_{name}"
    metric.__doc__ = f"TF 1.15's `streaming_{name}(predictions, labels, ...)`: `tf.compat.v1.metrics.{name}`."
    return metric


streaming_accuracy = _predictions_first("accuracy")
streaming_auc = _predictions_first("auc")
streaming_precision = _predictions_first("precision")
streaming_recall = _predictions_first("recall")
streaming_mean_iou = _predictions_first("mean_iou")
streaming_mean_squared_error = _predictions_first("mean_squared_error")
streaming_mean_absolute_error = _predictions_first("mean_absolute_error")
