"""`tf.estimator.classifier_parse_example_spec` / `regressor_parse_example_spec`: the parsing spec of
tf.train.Example protos holding a model's features (from feature columns) and its label (and weight).

As tf.estimator's: the features' spec is `make_parse_example_spec(feature_columns)`, the label a
`FixedLenFeature` of shape `(1,)` (classifier) or `(label_dimension,)` (regressor), the weight column
(a name or a numeric column) its own spec; a label or weight column that is also a feature is a ValueError. TensorFlow 2's feature columns only
(`tf.feature_column.sequence_numeric_column`, ...) are accepted.
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
    spec = _features_spec(feature_columns)
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
    if weight_column.key in spec:
        raise ValueError(f"weight_column should not be used as feature. weight_column: {weight_column.key}, "
                         f"features: {sorted(spec)}")
    spec.update(weight_column.parse_example_spec)
    return spec


def _features_spec(feature_columns):
    """The features' spec: TensorFlow 2's `make_parse_example_spec` (which takes the columns only TF 2 has, such as
    `sequence_numeric_column`), or TF 1's for a list that holds a TF 1-only column (what tf.compat.v1's
    parse-spec functions take)."""
    from tensorflow.python.feature_column import feature_column_v2_types

    columns = list(feature_columns)
    if all(isinstance(column, feature_column_v2_types.FeatureColumn) for column in columns):
        return tf.feature_column.make_parse_example_spec(columns)
    return tf.compat.v1.feature_column.make_parse_example_spec(columns)
