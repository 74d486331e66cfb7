"""`tf.compat.v1.estimator.experimental.dnn_logit_fn_builder` and `linear_logit_fn_builder`: tf.estimator
2.15's v1-only builders of logit functions (`logit_fn(features, mode)` / `logit_fn(features)` -> logits) for a
custom model_fn, with the premade models' layers and variable names, created in the caller's variable scope
(`input_from_feature_columns/...`, `hiddenlayer_<i>/kernel|bias`, `logits/kernel|bias`;
`linear_model/<column>/weights`, `linear_model/bias_weights`)."""
from __future__ import annotations

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ._common import feature_column_quiet
from .dnn import hidden_layers_and_logits

_v1 = tf.compat.v1


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn, dropout, input_layer_partitioner,
                         batch_norm):
    """A `logit_fn(features, mode)` of a feed-forward network (`units` outputs); batch-norm moving-average
    updates go to tf.GraphKeys.UPDATE_OPS, as TF 1's layers did."""
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")

    def dnn_logit_fn(features, mode):
        training = mode == ModeKeys.TRAIN
        update_ops = []
        with _v1.variable_scope("input_from_feature_columns", values=tuple(features.values()),
                                partitioner=input_layer_partitioner):
            with feature_column_quiet():
                net = _v1.feature_column.input_layer(features, list(feature_columns))
        logits = hidden_layers_and_logits(net, units, hidden_units, activation_fn, dropout, batch_norm, training,
                                          update_ops)
        for op in update_ops:
            _v1.add_to_collection(_v1.GraphKeys.UPDATE_OPS, op)
        return logits

    return dnn_logit_fn


def linear_logit_fn_builder(units, feature_columns, sparse_combiner="sum"):
    """A `logit_fn(features)` of a linear model (`units` outputs; `sparse_combiner` 'sum', 'mean' or 'sqrtn')."""
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of 'sum', 'mean' or 'sqrtn'; got {sparse_combiner!r}")

    def linear_logit_fn(features):
        with feature_column_quiet():
            return _v1.feature_column.linear_model(features, list(feature_columns), units=units,
                                                   sparse_combiner=sparse_combiner)

    return linear_logit_fn
