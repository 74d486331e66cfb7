"""TensorFlow 1's head module, `tensorflow.python.estimator.canned.head` (libraries build model_fns on it):
the `_Head` interface (name, logits_dimension, create_loss -> LossSpec, create_estimator_spec with an
`optimizer` or `train_op_fn`), and its factories `_binary_logistic_head_with_sigmoid_cross_entropy_loss`,
`_multi_class_head_with_softmax_cross_entropy_loss`, `_regression_head`,
`_binary_logistic_or_multi_class_head`. Their heads are the tf.estimator 2.x heads of `npurun.tf_estimator.head`
(same losses, predictions and metric keys) with TF 1's default loss reduction (`tf.compat.v1.losses.Reduction.SUM`),
TF 1's reductions accepted, and `tf.compat.v1.GraphKeys.UPDATE_OPS` run with the train op."""
from __future__ import annotations

import abc
import collections

import tensorflow as tf

from ..head import base as _base
from ..head.classification import BinaryClassHead, MultiClassHead
from ..head.keys import MetricKeys, PredictionKeys  # noqa: F401
from ..head.regression import RegressionHead

_v1 = tf.compat.v1
_DEFAULT_SERVING_KEY = _base.DEFAULT_SERVING_KEY
_CLASSIFY_SERVING_KEY = _base.CLASSIFY_SERVING_KEY
_REGRESS_SERVING_KEY = _base.REGRESS_SERVING_KEY
_PREDICT_SERVING_KEY = _base.PREDICT_SERVING_KEY

LossSpec = collections.namedtuple("LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"])


def _summary_key(head_name, val):
    return f"{val}/{head_name}" if head_name else val


class _Head(abc.ABC):
    """TensorFlow 1's head interface."""

    @property
    @abc.abstractmethod
    def name(self):
        """The head's name, or None."""

    @property
    @abc.abstractmethod
    def logits_dimension(self):
        """The last dimension of the logits."""

    @abc.abstractmethod
    def create_loss(self, features, mode, logits, labels):
        """A LossSpec."""

    @abc.abstractmethod
    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, train_op_fn=None,
                              regularization_losses=None):
        """An EstimatorSpec."""


class _HeadV1(_Head):
    """A TF 1 head over a tf.estimator 2.x head."""

    def __init__(self, head, loss_reduction):
        if loss_reduction not in _base._V1_REDUCTIONS:
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        head._loss_reduction = loss_reduction  # validated above against TF 1's reductions
        self._head = head

    @property
    def name(self):
        return self._head.name

    @property
    def logits_dimension(self):
        return self._head.logits_dimension

    @property
    def loss_reduction(self):
        return self._head.loss_reduction

    def create_loss(self, features, mode, logits, labels):
        del mode
        head = self._head
        logits = _base.check_logits_final_dim(logits, head.logits_dimension)
        labels = head._processed_labels(logits, labels)
        unweighted, weights = head._unweighted_loss_and_weights(logits, labels, features)
        training_loss = _base.compute_weighted_loss(unweighted, weights, head.loss_reduction)
        return LossSpec(training_loss=training_loss, unreduced_loss=unweighted, weights=weights,
                        processed_labels=labels)

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, train_op_fn=None,
                              regularization_losses=None):
        update_ops = _v1.get_collection(_v1.GraphKeys.UPDATE_OPS) if mode == "train" else None
        trainable = None if optimizer is None or _base.is_v1_optimizer(optimizer) else _v1.trainable_variables()
        return self._head.create_estimator_spec(features=features, mode=mode, logits=logits, labels=labels,
                                                optimizer=optimizer, trainable_variables=trainable,
                                                train_op_fn=train_op_fn, update_ops=update_ops or None,
                                                regularization_losses=regularization_losses)


_SUM = _v1.losses.Reduction.SUM


def _binary_logistic_head_with_sigmoid_cross_entropy_loss(weight_column=None, thresholds=None, label_vocabulary=None,
                                                          loss_reduction=_SUM, loss_fn=None, name=None):
    return _HeadV1(BinaryClassHead(weight_column=weight_column, thresholds=thresholds,
                                   label_vocabulary=label_vocabulary, loss_fn=loss_fn, name=name), loss_reduction)


def _multi_class_head_with_softmax_cross_entropy_loss(n_classes, weight_column=None, label_vocabulary=None,
                                                      loss_reduction=_SUM, loss_fn=None, name=None):
    return _HeadV1(MultiClassHead(n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary,
                                  loss_fn=loss_fn, name=name), loss_reduction)


def _regression_head(weight_column=None, label_dimension=1, loss_reduction=_SUM, loss_fn=None, inverse_link_fn=None,
                     name=None):
    return _HeadV1(RegressionHead(label_dimension=label_dimension, weight_column=weight_column, loss_fn=loss_fn,
                                  inverse_link_fn=inverse_link_fn, name=name), loss_reduction)


def _binary_logistic_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction):
    if n_classes == 2:
        return _binary_logistic_head_with_sigmoid_cross_entropy_loss(
            weight_column=weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    return _multi_class_head_with_softmax_cross_entropy_loss(
        n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
