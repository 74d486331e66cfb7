"""`tf.estimator.DNNClassifier`, `DNNRegressor`, `DNNEstimator`: tf.estimator 2.15's signatures, defaults
(`optimizer='Adagrad'` at Adagrad's own learning rate, 0.001, as TF 2.15's tf.estimator; ReLU; glorot-uniform
kernels, zero biases) and variable names (`dnn/input_from_feature_columns/input_layer/<column>/...`,
`dnn/hiddenlayer_<i>/kernel|bias`, `dnn/logits/kernel|bias`, optimizer slots `training/Adagrad/...`), so a
TF 2.15 checkpoint restores. The input layer is TensorFlow 2.21's `tf.compat.v1.feature_column.input_layer`
(which orders columns by name, as TF 2.15's DenseFeatures did)."""
from __future__ import annotations

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ..head import RegressionHead
from ..head.base import SUM_OVER_BATCH_SIZE
from . import optimizers
from ._common import (add_layer_summary, binary_or_multi_class_head, check_features, estimator_base,
                      feature_column_quiet, new_trainable_variables, resource_variables)

_v1 = tf.compat.v1
_BATCH_NORM_MOMENTUM = 0.999
_BATCH_NORM_EPSILON = 1e-3  # Keras BatchNormalization's default


def _dense(net, units, activation, scope):
    with _v1.variable_scope(scope):
        kernel = _v1.get_variable("kernel", [net.shape[-1], units], initializer=_v1.glorot_uniform_initializer())
        bias = _v1.get_variable("bias", [units], initializer=_v1.zeros_initializer())
        net = tf.nn.bias_add(tf.matmul(net, kernel), bias)
        return activation(net) if activation is not None else net


def _batch_norm(net, name, training, update_ops):
    """Keras's BatchNormalization(momentum=0.999) on [batch, units], its variables named as TF 2.15's."""
    units = net.shape[-1]
    with _v1.variable_scope(name):
        gamma = _v1.get_variable("gamma", [units], initializer=_v1.ones_initializer())
        beta = _v1.get_variable("beta", [units], initializer=_v1.zeros_initializer())
        moving_mean = _v1.get_variable("moving_mean", [units], initializer=_v1.zeros_initializer(), trainable=False)
        moving_variance = _v1.get_variable("moving_variance", [units], initializer=_v1.ones_initializer(),
                                           trainable=False)
    if training:
        mean, variance = tf.nn.moments(net, axes=[0])
        decay = 1. - _BATCH_NORM_MOMENTUM
        update_ops.append(moving_mean.assign_sub((moving_mean - mean) * decay))
        update_ops.append(moving_variance.assign_sub((moving_variance - variance) * decay))
    else:
        mean, variance = moving_mean, moving_variance
    return tf.nn.batch_normalization(net, mean, variance, beta, gamma, _BATCH_NORM_EPSILON)


def dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn, dropout, batch_norm):
    """(logits, trainable variables, update ops) of the DNN, under the variable scope `dnn`."""
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")
    training = mode == ModeKeys.TRAIN
    update_ops = []
    with new_trainable_variables() as variables:
        with _v1.variable_scope("dnn"):
            with _v1.variable_scope("input_from_feature_columns"):
                with feature_column_quiet():
                    net = _v1.feature_column.input_layer(features, list(feature_columns))
            logits = hidden_layers_and_logits(net, units, hidden_units, activation_fn, dropout, batch_norm, training,
                                              update_ops, summary_prefix="dnn/")
    return logits, variables, update_ops


def hidden_layers_and_logits(net, units, hidden_units, activation_fn, dropout, batch_norm, training, update_ops,
                             summary_prefix=""):
    """The premade DNN's `hiddenlayer_<i>` stack (dropout and batch norm as configured) and its `logits` layer,
    in the current variable scope; batch-norm moving-average updates are appended to `update_ops`."""
    for layer_id, num_units in enumerate(hidden_units):
        scope = f"hiddenlayer_{layer_id}"
        net = _dense(net, num_units, activation_fn, scope)
        if dropout is not None and training:
            net = tf.nn.dropout(net, rate=dropout)
        if batch_norm:
            with _v1.variable_scope(scope):
                net = _batch_norm(net, f"batchnorm_{layer_id}", training, update_ops)
        add_layer_summary(net, f"{summary_prefix}{scope}")
    logits = _dense(net, units, None, "logits")
    add_layer_summary(logits, f"{summary_prefix}logits")
    return logits


def dnn_model_fn_v2(features, labels, mode, head, hidden_units, feature_columns, optimizer="Adagrad",
                    activation_fn=tf.nn.relu, dropout=None, config=None, use_tpu=False, batch_norm=False):
    """tf.estimator 2.x's DNN model_fn."""
    del config, use_tpu
    check_features(features)
    logits, variables, update_ops = dnn_logits(features, mode, head.logits_dimension, hidden_units, feature_columns,
                                               activation_fn, dropout, batch_norm)
    if mode == ModeKeys.TRAIN:
        optimizer = optimizers.get_optimizer_instance_v2(optimizer)
        optimizers.drives_global_step(optimizer)
    else:
        optimizer = None
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits,
                                      trainable_variables=variables, update_ops=update_ops or None)


def _model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm):
    @resource_variables
    def model_fn(features, labels, mode, config):
        return dnn_model_fn_v2(features, labels, mode, head, hidden_units, tuple(feature_columns or []), optimizer,
                               activation_fn, dropout, config, batch_norm=batch_norm)
    return model_fn


_Estimator = estimator_base()


class DNNClassifier(_Estimator):
    """A feed-forward classifier (`tf.estimator.DNNClassifier`)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None, config=None,
                 warm_start_from=None, loss_reduction=SUM_OVER_BATCH_SIZE, batch_norm=False):
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        self._feature_columns = feature_columns
        super().__init__(model_fn=_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                            batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(_Estimator):
    """A feed-forward regressor (`tf.estimator.DNNRegressor`)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Adagrad", activation_fn=tf.nn.relu, dropout=None, config=None, warm_start_from=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, batch_norm=False):
        head = RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                              loss_reduction=loss_reduction)
        self._feature_columns = feature_columns
        super().__init__(model_fn=_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                            batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimator(_Estimator):
    """A feed-forward model with a user-given head (`tf.estimator.DNNEstimator`)."""

    def __init__(self, head, hidden_units, feature_columns, model_dir=None, optimizer="Adagrad",
                 activation_fn=tf.nn.relu, dropout=None, config=None, warm_start_from=None, batch_norm=False):
        self._feature_columns = feature_columns
        super().__init__(model_fn=_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                            batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
