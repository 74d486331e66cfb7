"""`tf.estimator.classifier_parse_example_spec` / `regressor_parse_example_spec`: the parsing spec of
tf.train.Example protos holding a model's features (from feature columns) and its label (and weight).

As tf.estimator's: the features' spec is `make_parse_example_spec(feature_columns)`, the label a
`FixedLenFeature` of shape `(1,)` (classifier) or `(label_dimension,)` (regressor), the weight column
(a name or a numeric column) its own spec; a label that is also a feature is a ValueError.
"""
from __future__ import annotations

import tensorflow as tf


def classifier_parse_example_spec(feature_columns, label_key, label_dtype=tf.int64, label_default=None,
                                  weight_column=None):
    """The parsing spec for a classifier's training input (see the module doc)."""
    label = tf.io.FixedLenFeature((1,), label_dtype, label_default)
    return _with_label_and_weight(feature_columns, label_key, label, weight_column)


def regressor_parse_example_spec(feature_columns, label_key, label_dtype=tf.float32, label_default=None,
                                 label_dimension=1, weight_column=None):
    """The parsing spec for a regressor's training input (see the module doc)."""
    label = tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default)
    return _with_label_and_weight(feature_columns, label_key, label, weight_column)


def _with_label_and_weight(feature_columns, label_key, label_spec, weight_column):
    spec = tf.compat.v1.feature_column.make_parse_example_spec(feature_columns)
    if label_key in spec:
        raise ValueError(f"label should not be used as feature. label_key: {label_key}, features: {sorted(spec)}")
    spec[label_key] = label_spec
    if weight_column is None:
        return spec
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(weight_column)
    if type(weight_column).__name__ != "NumericColumn":
        raise ValueError(f"weight_column should be an instance of tf.feature_column.numeric_column. Given type: "
                         f"{type(weight_column)} value: {weight_column}")
    spec.update(weight_column.parse_example_spec)
    return spec
