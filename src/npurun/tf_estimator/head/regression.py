"""`tf.estimator.RegressionHead`, `PoissonRegressionHead` and `LogisticRegressionHead` (tf.estimator 2.15's
semantics): mean squared error by default, a Poisson or logistic loss with an inverse link for the others."""
from __future__ import annotations

import tensorflow as tf

from . import base
from .base import DEFAULT_SERVING_KEY, PREDICT_SERVING_KEY, REGRESS_SERVING_KEY, SUM_OVER_BATCH_SIZE, Head, keras
from .base import PredictOutput, RegressionOutput
from .keys import MetricKeys as _K
from .keys import PredictionKeys as _P

_v1 = tf.compat.v1


class RegressionHead(base.WeightedLoss, Head):
    """Regression over `label_dimension` values. Metrics: average_loss, label/mean, prediction/mean.
    With `inverse_link_fn`, predictions are `inverse_link_fn(logits)` and the logits are predicted too."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None,
                 inverse_link_fn=None, name=None):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        base.validate_loss_reduction(loss_reduction)
        if loss_fn:
            base.validate_loss_fn_args(loss_fn)
        self._logits_dimension = label_dimension
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._inverse_link_fn = inverse_link_fn
        self._name = name
        self._loss_mean_key = self._summary_key(_K.LOSS_MEAN)
        self._prediction_mean_key = self._summary_key(_K.PREDICTION_MEAN)
        self._label_mean_key = self._summary_key(_K.LABEL_MEAN)
        self._loss_regularization_key = self._summary_key(_K.LOSS_REGULARIZATION)

    @property
    def name(self):
        return self._name

    @property
    def logits_dimension(self):
        return self._logits_dimension

    @property
    def loss_reduction(self):
        return self._loss_reduction

    def _processed_labels(self, logits, labels):
        labels = base.check_dense_labels_match_logits_and_reshape(labels, logits, self._logits_dimension)
        return tf.cast(labels, tf.float32)

    def _unweighted_loss_and_weights(self, logits, labels, features):
        if self._loss_fn:
            unweighted = base.call_loss_fn(self._loss_fn, labels, logits, features,
                                           expected_loss_dim=self._logits_dimension)
        else:
            unweighted = _v1.losses.mean_squared_error(labels=labels, predictions=logits,
                                                       reduction=_v1.losses.Reduction.NONE)
        weights = base.get_weights_and_check_match_logits(features, self._weight_column, logits,
                                                          allow_per_logit_weights=True)
        return unweighted, weights

    def predictions(self, logits, keys=None):
        del keys  # tf.estimator's regression heads predict all their keys
        logits = base.check_logits_final_dim(logits, self._logits_dimension)
        with tf.name_scope("predictions"):
            if self._inverse_link_fn:
                return {_P.PREDICTIONS: self._inverse_link_fn(logits), _P.LOGITS: logits}
            return {_P.PREDICTIONS: logits}

    def metrics(self, regularization_losses=None):
        m = keras().metrics
        with tf.name_scope("metrics"):
            metrics = {self._loss_mean_key: m.Mean(name=_K.LOSS_MEAN),
                       self._prediction_mean_key: m.Mean(name=_K.PREDICTION_MEAN),
                       self._label_mean_key: m.Mean(name=_K.LABEL_MEAN)}
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=_K.LOSS_REGULARIZATION)
        return metrics

    def update_metrics(self, eval_metrics, features, logits, labels, regularization_losses=None):
        predicted = self.predictions(logits)[_P.PREDICTIONS]
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        labels = self._processed_labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
        eval_metrics[self._loss_mean_key].update_state(values=unweighted, sample_weight=weights)
        eval_metrics[self._label_mean_key].update_state(values=labels, sample_weight=weights)
        base.update_metric_with_broadcast_weights(eval_metrics[self._prediction_mean_key], predicted, weights)
        if regularization_losses is not None:
            eval_metrics[self._loss_regularization_key].update_state(values=tf.math.add_n(regularization_losses))
        return eval_metrics

    def _export_outputs(self, predictions):
        regression = RegressionOutput(value=predictions[_P.PREDICTIONS])
        return {DEFAULT_SERVING_KEY: regression, REGRESS_SERVING_KEY: regression,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}


class PoissonRegressionHead(RegressionHead):
    """Poisson regression: `tf.nn.log_poisson_loss` on the logits, predictions `exp(logits)`."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE,
                 compute_full_loss=True, name=None):
        self._compute_full_loss = compute_full_loss
        super().__init__(label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction,
                         loss_fn=self._poisson_loss, inverse_link_fn=tf.math.exp, name=name)

    def _poisson_loss(self, labels, logits):
        return tf.nn.log_poisson_loss(targets=labels, log_input=logits, compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
    """Regression of a value in [0, 1]: sigmoid cross-entropy on the logits, predictions `sigmoid(logits)`."""

    def __init__(self, weight_column=None, loss_reduction=SUM_OVER_BATCH_SIZE, name=None):
        super().__init__(label_dimension=1, weight_column=weight_column, loss_reduction=loss_reduction,
                         loss_fn=self._logistic_loss, inverse_link_fn=tf.math.sigmoid, name=name)

    def _logistic_loss(self, labels, logits):
        labels = base.check_label_range(labels, n_classes=2, message="Labels must be in range [0, 1]")
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
