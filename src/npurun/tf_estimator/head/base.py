"""`tf.estimator.Head` and what every head shares: label, logits and weight checks, the train op, summaries.

A head turns logits into an EstimatorSpec for each mode, with tf.estimator 2.15's semantics
(`tensorflow_estimator.python.estimator.head.base_head`): losses reduced by `loss_reduction`
(`SUM_OVER_BATCH_SIZE` by default: the weighted sum divided by the number of loss elements), the
metric and prediction keys of `keys.py`, and the export signatures `serving_default`,
`classification` / `regression` and `predict`.

Written here rather than taken from tensorflow_estimator, which TensorFlow 2.16+ no longer ships
(and whose 2.15 package cannot be imported on TensorFlow 2.21). Metrics are the Keras 2 metric
objects tf.estimator 2.15's heads use (`tf.keras.metrics.Mean`, `AUC`, ...), from the maintained
`tf-keras` package (Keras 3's metrics record no graph updates); the Estimator turns each into a
`(value, update_op)` pair with local variables, so the numbers are those of TF 2.15's heads.
Specs are npurun's `EstimatorSpec`, so a head runs on NPUEstimator like any model_fn.
"""
from __future__ import annotations

import abc
import inspect

import tensorflow as tf

from ...estimator.export_output import ClassificationOutput, PredictOutput, RegressionOutput  # noqa: F401
from ...estimator.spec import EstimatorSpec, ModeKeys
from .keys import MetricKeys, PredictionKeys

_v1 = tf.compat.v1

DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"


def keras():
    """tf-keras (Keras 2): its metrics, losses utilities and legacy optimizers are TF 2.15's."""
    import tf_keras

    return tf_keras


class _Reduction:
    """`tf.losses.Reduction` (Keras 2's ReductionV2) as the heads accept it."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)


Reduction = _Reduction
SUM_OVER_BATCH_SIZE = Reduction.SUM_OVER_BATCH_SIZE

_LABEL_NONE_ERR_MSG = (
    "You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check that your data contains "
    "your label feature. Check that your input_fn properly parses and returns labels.")
_SPARSE_LABEL_ERR_MSG = (
    "SparseTensor labels are not supported. Labels must be a Tensor of shape [D0, D1, ..., DN, {0}], e.g. "
    "[batch_size, {0}].Suggested Fix (1): Check the label feature in your data. Each example must contain {0} "
    "value(s). If not, your choice of label was probably incorrect. Suggested Fix (2): In your input_fn, use "
    "tf.sparse_tensor_to_dense() to turn labels into a Tensor.")
_MISMATCHED_LABEL_DIM_ERR_MSG = (
    "Mismatched label shape. Expected labels dimension={}.  Received {}. Suggested Fix: If your classifier expects "
    "one-hot encoding label, check your n_classes argument to the estimator and/or the shape of your label. "
    "Otherwise, check the shape of your label.")
_LABEL_SHAPE_ERR_MSG = ("labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your n_classes argument to "
                        "the head and/or the shape of your label.")
_VALIDATION_ERROR_MSG = "{} should be a list or a tuple. Given type: {}."


class Head(abc.ABC):
    """tf.estimator's head interface: a loss, predictions, metrics and an EstimatorSpec from logits.

    Subclasses define `name`, `logits_dimension`, `loss_reduction`, `loss`, `predictions`, `metrics`
    and `update_metrics`; `create_estimator_spec` builds the spec of each mode from them (with the
    head's export outputs, see `_export_outputs`).
    """

    @property
    @abc.abstractmethod
    def name(self):
        """The head's name (a suffix of its metric and summary keys), or None."""

    @property
    @abc.abstractmethod
    def logits_dimension(self):
        """The size of the last dimension of the logits this head takes."""

    @property
    @abc.abstractmethod
    def loss_reduction(self):
        """How the training loss is reduced over the batch (`tf.losses.Reduction`)."""

    @abc.abstractmethod
    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The reduced (regularized) training loss, a scalar tensor."""

    @abc.abstractmethod
    def predictions(self, logits, keys=None):
        """A dict of prediction tensors."""

    @abc.abstractmethod
    def metrics(self, regularization_losses=None):
        """A dict of metric key -> new metric object."""

    @abc.abstractmethod
    def update_metrics(self, eval_metrics, features, logits, labels, mode=None, regularization_losses=None):
        """Update the metric objects of `metrics()` with one batch; returns the dict."""

    def _summary_key(self, key):
        return f"{key}/{self.name}" if self.name else key

    def _export_outputs(self, predictions):
        """Signature name -> ExportOutput for PREDICT (a head's own signatures; PredictOutput by default)."""
        output = PredictOutput(predictions)
        return {DEFAULT_SERVING_KEY: output, PREDICT_SERVING_KEY: output}

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, trainable_variables=None,
                              train_op_fn=None, update_ops=None, regularization_losses=None):
        """The EstimatorSpec of `mode` for these logits.

        TRAIN: `optimizer` (a Keras 2 optimizer, with `trainable_variables`; also a tf.compat.v1.train
        optimizer here) or `train_op_fn(loss)` makes the train op; `update_ops` run with it.
        EVAL: the head's metrics. PREDICT: the predictions and the head's export outputs.
        """
        with tf.name_scope(self.name or "head"):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=predictions,
                                     export_outputs=self._export_outputs(predictions))
            loss = self.loss(logits=logits, labels=labels, features=features, mode=mode,
                             regularization_losses=regularization_losses)
            if mode == ModeKeys.EVAL:
                eval_metrics = self.metrics(regularization_losses=regularization_losses)
                eval_metrics = self.update_metrics(eval_metrics, features, logits, labels,
                                                   regularization_losses=regularization_losses)
                return EstimatorSpec(mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
                                     eval_metric_ops=eval_metrics)
            if mode != ModeKeys.TRAIN:
                raise ValueError(f"mode={mode} unrecognized")
            train_op = create_estimator_spec_train_op(
                head_name=self.name, optimizer=optimizer, trainable_variables=trainable_variables,
                train_op_fn=train_op_fn, update_ops=update_ops, regularized_training_loss=loss,
                loss_reduction=self.loss_reduction)
        create_estimator_spec_summary(loss, regularization_losses, self._summary_key)
        return EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions, loss=loss, train_op=train_op)


# ---- checks shared by the heads -------------------------------------------------------------------
def _static_rank(tensor):
    return tensor.shape.ndims


def check_dense_labels_match_logits_and_reshape(labels, logits, expected_labels_dimension):
    """Labels as a dense tensor of shape logits.shape[:-1] + [expected_labels_dimension] (a rank one
    less than the logits' gets a last dimension of 1)."""
    if labels is None:
        raise ValueError(_LABEL_NONE_ERR_MSG)
    with tf.name_scope("labels"):
        labels = _v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.sparse.SparseTensor):
            raise ValueError(_SPARSE_LABEL_ERR_MSG.format(expected_labels_dimension))
        labels_rank, logits_rank = _static_rank(labels), _static_rank(logits)
        if labels_rank is not None and logits_rank is not None and labels_rank == logits_rank - 1:
            labels = tf.expand_dims(labels, -1)
            labels_rank += 1
        if labels_rank is not None and labels_rank < 2:
            raise ValueError(f"labels must have rank at least 2.  Received rank {labels_rank}, shape {labels.shape}")
        if labels_rank is not None:
            final_dim = labels.shape[-1]
            if final_dim is not None and final_dim != expected_labels_dimension:
                raise ValueError(_MISMATCHED_LABEL_DIM_ERR_MSG.format(expected_labels_dimension, final_dim))
        if tf.executing_eagerly():
            expected = tuple(logits.shape[:-1]) + (expected_labels_dimension,)
            if tuple(labels.shape) != expected:
                raise ValueError(f"{_LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension)}, expected_labels_shape: "
                                 f"{expected}. labels_shape: {tuple(labels.shape)}.")
            return labels
        assert_rank = _v1.debugging.assert_rank_at_least(
            labels, 2, message=_LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension))
        with tf.control_dependencies([assert_rank]):
            expected_shape = tf.concat([tf.shape(logits)[:-1], [expected_labels_dimension]], axis=0)
            labels_shape = tf.shape(labels)
            assert_dimension = _v1.debugging.assert_equal(
                expected_shape, labels_shape, message=_LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension),
                data=["expected_labels_shape: ", expected_shape, "labels_shape: ", labels_shape])
            with tf.control_dependencies([assert_dimension]):
                return tf.identity(labels)


def _weight_tensor(features, weight_column):
    if isinstance(weight_column, str):
        key, normalizer = weight_column, None
    elif hasattr(weight_column, "key") and hasattr(weight_column, "normalizer_fn") and \
            type(weight_column).__name__ in ("NumericColumn", "_NumericColumn"):
        key, normalizer = weight_column.key, weight_column.normalizer_fn
    else:
        raise TypeError(f"Weight column must be either a string or NumericColumn. Given type: {type(weight_column)}.")
    if key not in features:
        raise ValueError(f"The weight column {key!r} is not in the features; given features: {sorted(features)}")
    weights = features[key]
    if isinstance(weights, tf.sparse.SparseTensor):
        raise ValueError(f"The weight column {key!r} must be a dense tensor, got a SparseTensor")
    weights = tf.convert_to_tensor(weights)
    if normalizer is not None:
        weights = normalizer(weights)
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
        raise ValueError(f"Weight column should be castable to float. Given dtype: {weights.dtype}")
    return tf.cast(weights, tf.float32, name="weights")


def get_weights_and_check_match_logits(features, weight_column, logits, allow_per_logit_weights=False):
    """The weights of `weight_column` shaped to broadcast against the per-example loss (1. without one)."""
    if allow_per_logit_weights:
        err_msg = ("weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or "
                   "[D0, D1, ... DN, logits_dimension]")
    else:
        err_msg = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
    with tf.name_scope("weights"):
        if weight_column is None:
            return 1.
        weights = _weight_tensor(features, weight_column)
        weights_rank, logits_rank = _static_rank(weights), _static_rank(logits)
        logits_shape, weights_shape = tf.shape(logits), tf.shape(weights)
        if weights_rank is not None and logits_rank is not None and weights_rank == logits_rank - 1:
            if tf.executing_eagerly():
                if tuple(logits.shape[:-1]) != tuple(weights.shape):
                    raise ValueError(f"{err_msg}, logits_shape: {tuple(logits.shape)}. weights_shape: "
                                     f"{tuple(weights.shape)}.")
                return tf.expand_dims(weights, -1)
            check = _v1.debugging.assert_equal(logits_shape[:-1], weights_shape, message=err_msg,
                                               data=["logits_shape: ", logits_shape, "weights_shape: ", weights_shape])
            with tf.control_dependencies([check]):
                return tf.expand_dims(weights, -1)
        if weights_rank is not None and logits_rank is not None and weights_rank != logits_rank:
            raise ValueError(f"{err_msg}, logits_shape: {logits.shape}. weights_shape: {weights.shape}.")
        supported = tf.concat([logits_shape[:-1], [1]], axis=0)
        ok = tf.reduce_all(tf.equal(supported, weights_shape))
        if allow_per_logit_weights:
            ok = tf.logical_or(ok, tf.reduce_all(tf.equal(logits_shape, weights_shape)))
        if tf.executing_eagerly():
            if not bool(ok):
                raise ValueError(f"{err_msg}, logits_shape: {tuple(logits.shape)}. weights_shape: "
                                 f"{tuple(weights.shape)}.")
            return weights
        check = tf.debugging.Assert(ok, [err_msg, "logits_shape: ", logits_shape, "weights_shape: ", weights_shape])
        with tf.control_dependencies([check]):
            return tf.identity(weights)


def check_logits_final_dim(logits, expected_logits_dimension):
    """Float32 logits of rank >= 2 whose last dimension is `expected_logits_dimension`."""
    with tf.name_scope("logits"):
        logits = tf.cast(logits, tf.float32)
        rank = _static_rank(logits)
        if rank is not None and rank < 2:
            raise ValueError(f"logits must have rank at least 2.  Received rank {rank}, shape {logits.shape}")
        if rank is not None and logits.shape[-1] is not None:
            if isinstance(expected_logits_dimension, int) and logits.shape[-1] != expected_logits_dimension:
                raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], got {logits.shape}.")
            return logits
        if tf.executing_eagerly():
            return logits
        shape = tf.shape(logits)
        checks = [_v1.debugging.assert_rank_at_least(logits, 2, data=[shape], message=(
            "logits shape must be [D0, D1, ... DN, logits_dimension]"))]
        with tf.control_dependencies(checks):
            checks.append(_v1.debugging.assert_equal(expected_logits_dimension, shape[-1], data=[shape], message=(
                "logits shape must be [D0, D1, ... DN, logits_dimension]")))
        with tf.control_dependencies(checks):
            return tf.identity(logits)


def _fn_args(fn):
    if isinstance(fn, __import__("functools").partial):
        return tuple(name for name in _fn_args(fn.func)[len(fn.args):] if name not in (fn.keywords or {}))
    target = fn.__call__ if not inspect.isfunction(fn) and not inspect.ismethod(fn) and hasattr(fn, "__call__") \
        else fn
    names = tuple(inspect.signature(target).parameters)
    return names


def validate_loss_fn_args(loss_fn):
    """loss_fn takes `labels` and `logits`, and optionally `features` (and `loss_reduction`)."""
    args = _fn_args(loss_fn)
    for required in ("labels", "logits"):
        if required not in args:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: {args}")
    invalid = sorted(set(args) - {"labels", "logits", "features", "loss_reduction"})
    if invalid:
        raise ValueError(f"loss_fn has unexpected args: {invalid}")


def validate_loss_reduction(loss_reduction):
    if loss_reduction not in Reduction.all() or loss_reduction == Reduction.NONE:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` for valid options.")


def validate_update_ops(update_ops=None):
    if update_ops is not None and not isinstance(update_ops, (list, tuple)):
        raise ValueError(_VALIDATION_ERROR_MSG.format("update_ops", type(update_ops)))


def is_v1_optimizer(optimizer) -> bool:
    return isinstance(optimizer, _v1.train.Optimizer)


def is_keras2_optimizer(optimizer) -> bool:
    k = keras()
    return isinstance(optimizer, (k.optimizers.legacy.Optimizer, k.optimizers.Optimizer))


def validate_v2_optimizer(optimizer):
    """A Keras 2 optimizer (tf-keras; what tf.keras was in TF 2.15) or, here also, a tf.compat.v1.train one."""
    if not (is_keras2_optimizer(optimizer) or is_v1_optimizer(optimizer)):
        raise ValueError(f"The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received optimizer "
                         f"of type {type(optimizer)} (npurun's heads take a tf-keras (Keras 2) optimizer such as "
                         f"tf_keras.optimizers.legacy.Adagrad, or a tf.compat.v1.train optimizer; Keras 3 "
                         f"optimizers do not run in TensorFlow 1 graphs)")


def validate_trainable_variables(trainable_variables=None):
    if trainable_variables is None:
        raise ValueError(f"trainable_variables cannot be None. Given {trainable_variables}")
    if not isinstance(trainable_variables, (list, tuple)):
        raise ValueError(_VALIDATION_ERROR_MSG.format("trainable_variables", type(trainable_variables)))


def validate_n_classes(n_classes):
    if isinstance(n_classes, int) and n_classes <= 2:
        raise ValueError(f"n_classes must be > 2: {n_classes}.")
    if not isinstance(n_classes, int):
        raise ValueError(f"n_classes must be an int > 2: {n_classes!r}")
    return n_classes


def call_loss_fn(loss_fn, labels, logits, features, expected_loss_dim=1):
    """`loss_fn(labels=, logits=[, features=])`, checked to return shape logits.shape[:-1] + [expected_loss_dim]."""
    kwargs = {"features": features} if "features" in _fn_args(loss_fn) else {}
    with tf.name_scope("call_loss_fn"):
        unweighted_loss = loss_fn(labels=labels, logits=logits, **kwargs)
        if tf.executing_eagerly():
            expected = tuple(logits.shape[:-1]) + (expected_loss_dim,)
            if tuple(unweighted_loss.shape) != expected:
                raise ValueError(f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. "
                                 f"logits_shape: {tuple(logits.shape)} loss_shape: {tuple(unweighted_loss.shape)}")
            return unweighted_loss
        expected = tf.concat([tf.shape(logits)[:-1], [expected_loss_dim]], axis=0, name="expected_loss_shape")
        loss_shape = tf.shape(unweighted_loss, name="loss_shape")
        check = tf.debugging.Assert(
            tf.reduce_all(tf.equal(loss_shape, expected)),
            [f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. ", "logits_shape: ",
             tf.shape(logits), "loss_shape: ", loss_shape], name="check_loss_shape")
        with tf.control_dependencies([check]):
            return tf.identity(unweighted_loss)


def check_prediction_keys(pred_keys, valid_keys):
    for key in pred_keys:
        if key not in valid_keys:
            raise ValueError(f"Prediction key must be in PredictionKeys, given: {key}.Valid prediction keys include "
                             f"{valid_keys}.")


def all_class_ids(logits, n_classes):
    batch_size = tf.shape(logits)[0]
    return tf.tile(tf.expand_dims(tf.range(n_classes), axis=0), [batch_size, 1])


def all_classes(logits, n_classes, label_vocabulary=None):
    batch_size = tf.shape(logits)[0]
    if label_vocabulary:
        classes = tf.convert_to_tensor([list(label_vocabulary)])
    else:
        classes = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), axis=0))
    return tf.tile(classes, [batch_size, 1])


def classification_output(scores, n_classes, label_vocabulary=None):
    return ClassificationOutput(scores=scores, classes=all_classes(scores, n_classes, label_vocabulary))


def check_label_range(labels, n_classes, message=None):
    """Labels in [0, n_classes - 1] (asserted when the graph runs)."""
    with tf.name_scope("check_label_range"):
        if tf.executing_eagerly():
            if not bool(tf.reduce_all(labels <= n_classes - 1)):
                raise ValueError(message or f"Labels must be <= {n_classes} - 1")
            if not bool(tf.reduce_all(labels >= 0)):
                raise ValueError(message or "Labels must be >= 0")
            return labels
        less = _v1.debugging.assert_less_equal(labels, tf.cast(n_classes - 1, labels.dtype),
                                               message=message or "Labels must be <= n_classes - 1")
        greater = _v1.debugging.assert_non_negative(labels, message=message or "Labels must be >= 0")
        with tf.control_dependencies((less, greater)):
            return tf.identity(labels)


def broadcast_weights(weights, values):
    from tensorflow.python.ops import weights_broadcast_ops

    return weights_broadcast_ops.broadcast_weights(weights, values)


def update_metric_with_broadcast_weights(eval_metric, values, weights):
    values = tf.cast(values, tf.float32)
    if weights is not None:
        weights = broadcast_weights(weights, values)
    eval_metric.update_state(values=values, sample_weight=weights)


_V1_REDUCTIONS = frozenset(_v1.losses.Reduction.all()) - {_v1.losses.Reduction.NONE}


def compute_weighted_loss(unweighted_loss, weights, reduction):
    """Keras 2's weighted loss reduction (SUM_OVER_BATCH_SIZE: the weighted sum / number of loss elements);
    a tf.compat.v1.losses.Reduction (the TF 1 heads of `canned.head`) reduces as tf.compat.v1.losses does."""
    if reduction in _V1_REDUCTIONS:
        return _v1.losses.compute_weighted_loss(unweighted_loss, weights=weights, reduction=reduction)
    return keras().__internal__.losses.compute_weighted_loss(unweighted_loss, sample_weight=weights,
                                                             reduction=reduction)


def regularized(training_loss, regularization_losses):
    if regularization_losses is None:
        return training_loss
    return training_loss + tf.math.add_n(regularization_losses)


def keras_updates(optimizer, loss, variables):
    """A Keras 2 optimizer's update op (its slot initialisers' TensorFlow deprecation notices silenced: the
    user did not write them)."""
    from tensorflow.python.util import deprecation

    with deprecation.silence():
        return optimizer.get_updates(loss, list(variables))[0]


def _root_name_scope():
    """The graph's top-level name scope (tf.estimator resets the scope for the train op and summaries)."""
    if tf.executing_eagerly():
        return tf.name_scope("")
    return _v1.get_default_graph().name_scope(None)


def create_estimator_spec_train_op(head_name=None, optimizer=None, trainable_variables=None, train_op_fn=None,
                                   update_ops=None, regularized_training_loss=None,
                                   loss_reduction=SUM_OVER_BATCH_SIZE):
    """The train op, built under the root name scope `training` (where tf.estimator's optimizer slots live:
    `training/Adagrad/<variable>/accumulator`)."""
    del head_name, loss_reduction  # npurun's data parallelism averages gradients itself (no per-replica scaling)
    validate_update_ops(update_ops)
    with _root_name_scope():
        with tf.name_scope("training"):
            if optimizer is not None:
                if train_op_fn is not None:
                    raise ValueError("train_op_fn and optimizer cannot both be set.")
                validate_v2_optimizer(optimizer)
                if is_v1_optimizer(optimizer):  # all trainable variables when none are named, as in TF 1
                    train_op = optimizer.minimize(
                        regularized_training_loss, global_step=_v1.train.get_global_step(),
                        var_list=None if trainable_variables is None else list(trainable_variables))
                else:
                    validate_trainable_variables(trainable_variables)
                    train_op = keras_updates(optimizer, regularized_training_loss, trainable_variables)
            elif train_op_fn is not None:
                train_op = train_op_fn(regularized_training_loss)
            else:
                raise ValueError("train_op_fn and optimizer cannot both be None.")
            if update_ops is not None:
                train_op = tf.group(train_op, *update_ops)
            return train_op


def create_estimator_spec_summary(regularized_training_loss, regularization_losses=None, summary_key_fn=None):
    with _root_name_scope():
        key = summary_key_fn(MetricKeys.LOSS) if summary_key_fn else MetricKeys.LOSS
        _v1.summary.scalar(key, regularized_training_loss)
        if regularization_losses is not None:
            key = (summary_key_fn(MetricKeys.LOSS_REGULARIZATION) if summary_key_fn
                   else MetricKeys.LOSS_REGULARIZATION)
            _v1.summary.scalar(key, tf.math.add_n(regularization_losses))


__all__ = ["Head", "MetricKeys", "PredictionKeys", "DEFAULT_SERVING_KEY", "CLASSIFY_SERVING_KEY",
           "REGRESS_SERVING_KEY", "PREDICT_SERVING_KEY"]


class WeightedLoss:
    """The `loss` the built-in single heads share: labels checked and processed by the head
    (`_processed_labels`), its per-example loss and weights (`_unweighted_loss_and_weights`),
    reduced with `loss_reduction`, plus any regularization losses."""

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        del mode
        with tf.name_scope("losses"):
            logits = check_logits_final_dim(logits, self.logits_dimension)
            processed = self._processed_labels(logits, labels)
            unweighted, weights = self._unweighted_loss_and_weights(logits, processed, features)
            training_loss = compute_weighted_loss(unweighted, weights, self._loss_reduction)
            return regularized(training_loss, regularization_losses)
