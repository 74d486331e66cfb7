"""`tf.estimator.LinearClassifier`, `LinearRegressor`, `LinearEstimator`: tf.estimator 2.15's signatures,
defaults (`optimizer='Ftrl'` at learning rate 0.2; `optimizer=None`: Ftrl at min(0.2, 1/sqrt(#columns));
`sparse_combiner='sum'`) and variable names (`linear/linear_model/<column>/weights`,
`linear/linear_model/bias_weights`, slots `training/Ftrl/<variable>/accumulator|linear`), so a TF 2.15
checkpoint restores. The model is TensorFlow 2.21's `tf.compat.v1.feature_column.linear_model` (all
column kinds; `sparse_combiner` 'sum', 'mean' or 'sqrtn'). `partitioner` (tf.compat.v1.estimator's
argument) partitions the weights. `optimizer=tf.estimator.experimental.LinearSDCA(...)` trains it by SDCA
(canned/sdca.py)."""
from __future__ import annotations

import math

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ..head import RegressionHead
from ..head.base import SUM_OVER_BATCH_SIZE
from . import optimizers
from .sdca import LinearSDCA, check_for_estimator, sdca_model_fn
from ._common import (binary_or_multi_class_head, check_features, estimator_base, resource_variables,
                      feature_column_quiet, fraction_of_zero, new_trainable_variables)

_v1 = tf.compat.v1
_LEARNING_RATE = 0.2


def _default_optimizer(feature_columns):
    learning_rate = min(_LEARNING_RATE, 1. / math.sqrt(len(feature_columns)))
    return optimizers.get_optimizer_instance_v2("Ftrl", learning_rate=learning_rate)


def linear_logits(features, units, feature_columns, sparse_combiner="sum", partitioner=None):
    """(logits, trainable variables) of the linear model, under the variable scope `linear`."""
    with new_trainable_variables() as variables:
        with _v1.variable_scope("linear", partitioner=partitioner):
            cols_to_vars = {}
            with feature_column_quiet():
                logits = _v1.feature_column.linear_model(features, list(feature_columns), units=units,
                                                         sparse_combiner=sparse_combiner, cols_to_vars=cols_to_vars)
    bias = cols_to_vars.get("bias", [])
    weights = [v for column, parts in cols_to_vars.items() if column != "bias" for v in parts]
    if units > 1:
        _v1.summary.histogram("bias", bias[0] if len(bias) == 1 else tf.concat(bias, 0))
    elif bias:
        _v1.summary.scalar("bias", (bias[0] if len(bias) == 1 else tf.concat(bias, 0))[0])
    if weights:
        _v1.summary.scalar("fraction_of_zero_weights", fraction_of_zero(weights))
    return logits, variables


def linear_model_fn_v2(features, labels, mode, head, feature_columns, optimizer, config=None, sparse_combiner="sum",
                       partitioner=None):
    """tf.estimator 2.x's linear model_fn."""
    del config
    check_features(features)
    if isinstance(optimizer, LinearSDCA):
        return sdca_model_fn(features, labels, mode, head, feature_columns, optimizer, partitioner)
    logits, variables = linear_logits(features, head.logits_dimension, feature_columns, sparse_combiner, partitioner)
    if mode == ModeKeys.TRAIN:
        optimizer = optimizers.get_optimizer_instance_v2(optimizer or _default_optimizer(feature_columns),
                                                         learning_rate=_LEARNING_RATE)
        optimizers.drives_global_step(optimizer)
    else:
        optimizer = None
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=optimizer,
                                      trainable_variables=variables, logits=logits)


def _check_sparse_combiner(sparse_combiner):
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of 'sum', 'mean' or 'sqrtn'; got {sparse_combiner!r}")


def _model_fn(head, feature_columns, optimizer, sparse_combiner, partitioner):
    _check_sparse_combiner(sparse_combiner)

    @resource_variables
    def model_fn(features, labels, mode, config):
        return linear_model_fn_v2(features, labels, mode, head, tuple(feature_columns or []), optimizer, config,
                                  sparse_combiner, partitioner)
    return model_fn


_Estimator = estimator_base()


class LinearClassifier(_Estimator):
    """A linear classifier (`tf.estimator.LinearClassifier`)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, warm_start_from=None, loss_reduction=SUM_OVER_BATCH_SIZE,
                 sparse_combiner="sum", partitioner=None):
        check_for_estimator(optimizer, feature_columns, sparse_combiner, n_classes=n_classes)
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        self._feature_columns = feature_columns
        super().__init__(model_fn=_model_fn(head, feature_columns, optimizer, sparse_combiner, partitioner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(_Estimator):
    """A linear regressor (`tf.estimator.LinearRegressor`)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                 config=None, warm_start_from=None, loss_reduction=SUM_OVER_BATCH_SIZE, sparse_combiner="sum",
                 partitioner=None):
        check_for_estimator(optimizer, feature_columns, sparse_combiner, label_dimension=label_dimension)
        head = RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                              loss_reduction=loss_reduction)
        self._feature_columns = feature_columns
        super().__init__(model_fn=_model_fn(head, feature_columns, optimizer, sparse_combiner, partitioner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimator(_Estimator):
    """A linear model with a user-given head (`tf.estimator.LinearEstimator`)."""

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl", config=None, sparse_combiner="sum",
                 warm_start_from=None, partitioner=None):
        self._feature_columns = feature_columns
        super().__init__(model_fn=_model_fn(head, feature_columns, optimizer, sparse_combiner, partitioner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
