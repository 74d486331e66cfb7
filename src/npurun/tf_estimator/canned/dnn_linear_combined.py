"""`tf.estimator.DNNLinearCombinedClassifier`, `...Regressor`, `...Estimator` (wide & deep): tf.estimator 2.15's
signatures, defaults (linear part: Ftrl at min(0.005, 1/sqrt(#linear columns)); DNN part: Adagrad at 0.001) and
variable names (the DNN's and the linear model's, as DNNClassifier / LinearClassifier name them; slots
`training/Adagrad/...` and `training/Ftrl/...`, with the linear optimizer's own `training/Ftrl/iter` when both
parts exist: the DNN optimizer drives the global step)."""
from __future__ import annotations

import math

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ..head import RegressionHead
from ..head.base import SUM_OVER_BATCH_SIZE
from . import optimizers
from ._common import (add_layer_summary, binary_or_multi_class_head, check_features, estimator_base,
                      resource_variables)
from .dnn import dnn_logits
from .linear import linear_logits

_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def _linear_learning_rate(num_linear_feature_columns):
    return min(_LINEAR_LEARNING_RATE, 1. / math.sqrt(num_linear_feature_columns))


def _validate_feature_columns(linear_feature_columns, dnn_feature_columns):
    linear_feature_columns = list(linear_feature_columns or [])
    dnn_feature_columns = list(dnn_feature_columns or [])
    feature_columns = linear_feature_columns + dnn_feature_columns
    if not feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    return feature_columns


def dnn_linear_combined_model_fn_v2(features, labels, mode, head, linear_feature_columns=None,
                                    linear_optimizer="Ftrl", dnn_feature_columns=None, dnn_optimizer="Adagrad",
                                    dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                                    config=None, batch_norm=False, linear_sparse_combiner="sum",
                                    loss_reduction=SUM_OVER_BATCH_SIZE):
    """tf.estimator 2.x's wide & deep model_fn."""
    del config, loss_reduction
    check_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    training = mode == ModeKeys.TRAIN
    dnn_part = linear_part = None
    if dnn_feature_columns:
        if training:
            dnn_optimizer = optimizers.get_optimizer_instance_v2(dnn_optimizer, learning_rate=_DNN_LEARNING_RATE)
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        dnn_part = dnn_logits(features, mode, head.logits_dimension, dnn_hidden_units, dnn_feature_columns,
                              dnn_activation_fn, dnn_dropout, batch_norm)
    if linear_feature_columns:
        if training:
            linear_optimizer = optimizers.get_optimizer_instance_v2(
                linear_optimizer, learning_rate=_linear_learning_rate(len(linear_feature_columns)))
        linear_part = linear_logits(features, head.logits_dimension, linear_feature_columns, linear_sparse_combiner)
        add_layer_summary(linear_part[0], "linear")
    if dnn_part is not None and linear_part is not None:
        logits = dnn_part[0] + linear_part[0]
    else:
        logits = (dnn_part or linear_part)[0]

    def train_op_fn(loss):
        train_ops = []
        if dnn_part is not None:
            train_ops.append(optimizers.apply(dnn_optimizer, loss, dnn_part[1]))
            train_ops.extend(dnn_part[2])
        if linear_part is not None:
            train_ops.append(optimizers.apply(linear_optimizer, loss, linear_part[1],
                                              advance_global_step=dnn_part is None))
        return tf.group(*train_ops)

    if training:
        optimizers.drives_global_step(dnn_optimizer if dnn_part is not None else linear_optimizer)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, train_op_fn=train_op_fn,
                                      logits=logits)


def _model_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
              dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner, loss_reduction=SUM_OVER_BATCH_SIZE):
    @resource_variables
    def model_fn(features, labels, mode, config):
        return dnn_linear_combined_model_fn_v2(
            features, labels, mode, head, linear_feature_columns=linear_feature_columns,
            linear_optimizer=linear_optimizer, dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
            config=config, batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
            loss_reduction=loss_reduction)
    return model_fn


_Estimator = estimator_base()


class DNNLinearCombinedClassifier(_Estimator):
    """A wide & deep classifier (`tf.estimator.DNNLinearCombinedClassifier`)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                 n_classes=2, weight_column=None, label_vocabulary=None, config=None, warm_start_from=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, batch_norm=False, linear_sparse_combiner="sum"):
        self._feature_columns = _validate_feature_columns(linear_feature_columns, dnn_feature_columns)
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=_model_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                                            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                            batch_norm, linear_sparse_combiner, loss_reduction),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(_Estimator):
    """A wide & deep regressor (`tf.estimator.DNNLinearCombinedRegressor`)."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
                 label_dimension=1, weight_column=None, config=None, warm_start_from=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, batch_norm=False, linear_sparse_combiner="sum"):
        self._feature_columns = _validate_feature_columns(linear_feature_columns, dnn_feature_columns)
        head = RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                              loss_reduction=loss_reduction)
        super().__init__(model_fn=_model_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                                            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                            batch_norm, linear_sparse_combiner, loss_reduction),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(_Estimator):
    """A wide & deep model with a user-given head (`tf.estimator.DNNLinearCombinedEstimator`; TF 2.15's has no
    warm_start_from, npurun's takes it as the other premade estimators do)."""

    def __init__(self, head, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None, batch_norm=False,
                 linear_sparse_combiner="sum", warm_start_from=None):
        self._feature_columns = _validate_feature_columns(linear_feature_columns, dnn_feature_columns)
        super().__init__(model_fn=_model_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                                            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                                            batch_norm, linear_sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
