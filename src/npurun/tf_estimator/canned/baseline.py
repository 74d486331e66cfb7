"""`tf.estimator.BaselineClassifier`, `BaselineRegressor`, `BaselineEstimator`: a model that learns only a bias
(the label distribution's logits / the label mean), tf.estimator 2.15's signatures, defaults (Ftrl at 0.2) and
variable name (`baseline/bias`). Difference: TF 2.15 makes the bias under the features' batch-size checks, so its
initializer reads the input and fails ("iterator has not been initialized") when the features hold more than one
tensor from a tf.data input_fn; here the bias is made outside them."""
from __future__ import annotations

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ..head import RegressionHead
from ..head.base import SUM_OVER_BATCH_SIZE
from . import optimizers
from ._common import binary_or_multi_class_head, check_features, estimator_base, resource_variables

_v1 = tf.compat.v1
_LEARNING_RATE = 0.2


def _weight_column_key(weight_column):
    if weight_column is None:
        return None
    if isinstance(weight_column, str):
        return weight_column
    if not hasattr(weight_column, "key"):
        raise TypeError(f"Weight column must be either a string or NumericColumn. Given type: {type(weight_column)}.")
    return weight_column.key


def _batch_size_and_checks(features, weight_column_key):
    checks, batch_size = [], None
    for key, feature in features.items():
        if key == weight_column_key:
            continue
        if isinstance(feature, tf.sparse.SparseTensor):
            first = tf.cast(feature.dense_shape[0], tf.int32)
        else:
            first = tf.shape(feature, out_type=tf.int32)[0]
        if batch_size is None:
            batch_size = first
        else:
            checks.append(_v1.debugging.assert_equal(batch_size, first))
    if batch_size is None:
        raise ValueError("The baseline estimators need at least one feature (besides the weight column) to know the "
                         "batch size")
    return checks, batch_size


def baseline_logits(features, num_outputs, weight_column=None):
    """(logits, [bias]): the bias broadcast to [batch size, num_outputs]."""
    with _v1.variable_scope("baseline"):
        bias = _v1.get_variable("bias", shape=[num_outputs], initializer=_v1.zeros_initializer())
    checks, batch_size = _batch_size_and_checks(features, _weight_column_key(weight_column))
    with tf.control_dependencies(checks):
        with tf.name_scope("baseline"):
            logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))
    return logits, [bias]


def baseline_model_fn_v2(features, labels, mode, head, optimizer, weight_column=None, config=None,
                         loss_reduction=SUM_OVER_BATCH_SIZE):
    del config, loss_reduction
    check_features(features)
    logits, variables = baseline_logits(features, head.logits_dimension, weight_column)
    opt = None
    if mode == ModeKeys.TRAIN:
        opt = optimizers.get_optimizer_instance_v2(optimizer, learning_rate=_LEARNING_RATE)
        optimizers.drives_global_step(opt)

    def train_op_fn(loss):
        return optimizers.apply(opt, loss, variables)

    return head.create_estimator_spec(features=features, mode=mode, logits=logits, labels=labels,
                                      train_op_fn=train_op_fn)


def _model_fn(head, optimizer, weight_column, loss_reduction=SUM_OVER_BATCH_SIZE):
    @resource_variables
    def model_fn(features, labels, mode, config):
        return baseline_model_fn_v2(features, labels, mode, head, optimizer, weight_column, config, loss_reduction)
    return model_fn


_Estimator = estimator_base()


class BaselineClassifier(_Estimator):
    """Predicts the label distribution seen in training (`tf.estimator.BaselineClassifier`)."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None, optimizer="Ftrl",
                 config=None, loss_reduction=SUM_OVER_BATCH_SIZE, warm_start_from=None):
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=_model_fn(head, optimizer, weight_column, loss_reduction), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class BaselineRegressor(_Estimator):
    """Predicts the mean label seen in training (`tf.estimator.BaselineRegressor`)."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl", config=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, warm_start_from=None):
        head = RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                              loss_reduction=loss_reduction)
        super().__init__(model_fn=_model_fn(head, optimizer, weight_column, loss_reduction), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class BaselineEstimator(_Estimator):
    """A bias-only model with a user-given head (`tf.estimator.BaselineEstimator`)."""

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None, warm_start_from=None):
        super().__init__(model_fn=_model_fn(head, optimizer, None), model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)
