"""`tf.estimator.experimental.LinearSDCA`: Stochastic Dual Coordinate Ascent for `LinearClassifier` (binary,
logistic loss) and `LinearRegressor` (one-dimensional label, squared loss), as tf.estimator 2.15 trains them.

Written here (tf.estimator is not shipped for TensorFlow 2.16+) on the kernels TensorFlow 2.21 still has:
`tf.raw_ops.SdcaOptimizerV2` (one dual ascent step over a batch), `SdcaFprint` (example ids -> 128-bit keys).
How a training step goes, as tf.estimator's:

- the model is the linear model (`tf.compat.v1.feature_column.linear_model`, the same variables as with any
  other optimizer: `linear/linear_model/<column>/weights`, `.../bias_weights`); categorical columns are sparse
  features (repeated ids of an example summed, negative ids dropped), dense columns of rank 1 dense features,
  and the bias a dense feature of ones;
- each weight has an *unshrunk* copy (`<weight>_unshrunk`, zeros at the start) that the kernel's deltas are
  added to; each example's dual state (4 floats) lives in a hash table keyed by the fingerprint of its id
  (`example_id_column`, a string feature); after the step the weights are the unshrunk copies, shrunk by
  l1 / l2 towards zero when `symmetric_l1_regularization` > 0;
- the global step advances by one per step.

Difference: tf.estimator ran the weight update as a chief-only hook after the step (so non-chief workers skipped
it); here it is part of the train op, which gives the same weights after every step.
"""
from __future__ import annotations

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ._common import check_features, feature_column_quiet, fraction_of_zero, new_trainable_variables

_v1 = tf.compat.v1
_STATE_SIZE = 4  # per example: dual, primal loss, dual loss, example weight


class LinearSDCA:
    """`tf.estimator.experimental.LinearSDCA(example_id_column, num_loss_partitions=1, num_table_shards=None,
    symmetric_l1_regularization=0.0, symmetric_l2_regularization=1.0, adaptive=False)`: pass it as
    `optimizer=` of `LinearClassifier` (two classes) or `LinearRegressor` (label_dimension 1)."""

    def __init__(self, example_id_column, num_loss_partitions=1, num_table_shards=None,
                 symmetric_l1_regularization=0.0, symmetric_l2_regularization=1.0, adaptive=False):
        if not isinstance(example_id_column, str) or not example_id_column:
            raise ValueError(f"LinearSDCA: example_id_column must be the name of a string feature; got "
                             f"{example_id_column!r}")
        if not isinstance(num_loss_partitions, int) or num_loss_partitions < 1:
            raise ValueError(f"LinearSDCA: num_loss_partitions must be an int >= 1; got {num_loss_partitions!r}")
        if num_table_shards is not None and (not isinstance(num_table_shards, int) or num_table_shards < 1):
            raise ValueError(f"LinearSDCA: num_table_shards must be None or an int >= 1; got {num_table_shards!r}")
        if not symmetric_l1_regularization >= 0:
            raise ValueError(f"LinearSDCA: symmetric_l1_regularization must be >= 0; got "
                             f"{symmetric_l1_regularization!r}")
        if not symmetric_l2_regularization > 0:
            raise ValueError(f"LinearSDCA: symmetric_l2_regularization must be > 0 (the dual step divides by it); "
                             f"got {symmetric_l2_regularization!r}")
        self._example_id_column = example_id_column
        self._num_loss_partitions = num_loss_partitions
        self._num_table_shards = num_table_shards
        self._symmetric_l1_regularization = float(symmetric_l1_regularization)
        self._symmetric_l2_regularization = float(symmetric_l2_regularization)
        self._adaptive = bool(adaptive)


def is_feature_column_v2(feature_columns) -> bool:
    from tensorflow.python.feature_column import feature_column_v2_types

    return all(isinstance(column, feature_column_v2_types.FeatureColumn) for column in feature_columns)


def check_for_estimator(optimizer, feature_columns, sparse_combiner, n_classes=2, label_dimension=1):
    """tf.estimator's refusals when a LinearClassifier/LinearRegressor is given a LinearSDCA."""
    if not isinstance(optimizer, LinearSDCA):
        return
    if sparse_combiner != "sum":
        raise ValueError('sparse_combiner must be "sum" when optimizer is a LinearSDCA object.')
    if not is_feature_column_v2(feature_columns or []):
        raise ValueError("V2 feature columns required when optimizer is a LinearSDCA object.")
    if n_classes > 2:
        raise ValueError("LinearSDCA cannot be used in a multi-class setting.")
    if label_dimension > 1:
        raise ValueError("LinearSDCA can only be used with one-dimensional label.")


def _loss_type(head):
    from ..head import BinaryClassHead, LogisticRegressionHead, PoissonRegressionHead, RegressionHead

    if isinstance(head, BinaryClassHead):
        return "logistic_loss"
    if isinstance(head, RegressionHead) and not isinstance(head, (PoissonRegressionHead, LogisticRegressionHead)):
        if head.logits_dimension != 1:
            raise ValueError("LinearSDCA can only be used with one-dimensional label.")
        return "squared_loss"
    raise ValueError(f"Unsupported head type: {head}. LinearSDCA trains a BinaryClassHead (logistic loss) or a "
                     f"RegressionHead of one dimension (squared loss)")


def _unique_sparse_ids(sparse_ids, sparse_weights=None):
    """(example indices, feature ids, values) of a categorical column's SparseTensor: negative ids dropped and an
    id repeated within an example counted once, its weights (or ones) summed."""
    example = sparse_ids.indices[:, 0]
    ids = tf.cast(tf.reshape(sparse_ids.values, [-1]), tf.int64)
    if sparse_weights is not None:
        values = tf.cast(sparse_weights.values, tf.float32)
    else:
        values = tf.ones(tf.shape(ids), tf.float32)
    keep = ids >= 0
    example, ids, values = (tf.boolean_mask(t, keep) for t in (example, ids, values))
    width = tf.maximum(tf.reduce_max(tf.concat([ids, [0]], 0)) + 1, 1)
    unique_pairs, position = tf.unique(example * width + ids)
    count = tf.shape(unique_pairs)[0]
    unique_example = tf.math.unsorted_segment_min(example, position, count)
    unique_ids = unique_pairs - width * unique_example
    summed = tf.math.unsorted_segment_sum(values, position, count)
    return unique_example, unique_ids, summed


def _parts(variable):
    return list(variable) if isinstance(variable, (list, tuple)) else [variable]


def _whole(parts):
    return parts[0] if len(parts) == 1 else tf.concat(parts, axis=0)


def _unshrunk_copies(parts):
    copies = []
    for part in parts:
        with _v1.get_default_graph().name_scope(None):  # the name is the weight's full name + _unshrunk
            copies.append(_v1.Variable(tf.zeros(part.shape, tf.float32), name=part.op.name + "_unshrunk",
                                       trainable=False, use_resource=True))
    return copies


def _add_rows(parts, rows, delta):
    """Scatter-add delta[k] into row rows[k] of the (possibly partitioned) variable made of `parts`."""
    if len(parts) == 1:
        return [parts[0].scatter_add(tf.IndexedSlices(delta, rows))]
    updated = tf.tensor_scatter_nd_add(_whole(parts), tf.expand_dims(rows, 1), delta)
    sizes = [int(p.shape[0]) for p in parts]
    return [p.assign(value) for p, value in zip(parts, tf.split(updated, sizes, axis=0))]


def _add_all(parts, delta):
    if len(parts) == 1:
        return [parts[0].assign_add(tf.reshape(delta, parts[0].shape))]
    sizes = [int(p.shape[0]) for p in parts]
    return [p.assign_add(value) for p, value in zip(parts, tf.split(tf.reshape(delta, [sum(sizes), -1]), sizes))]


class _StateTable:
    """The examples' dual state, `num_shards` DenseHashTables keyed by SdcaFprint's [N, 2] int64 keys (their
    low half picks the shard). Saved in checkpoints (the tables are saveable objects of the graph)."""

    def __init__(self, num_shards):
        self._tables = [tf.lookup.experimental.DenseHashTable(
            key_dtype=tf.int64, value_dtype=tf.float32, default_value=[0.0] * _STATE_SIZE, empty_key=[0, 0],
            deleted_key=[1, 1], name=f"sdca_state_{i}" if num_shards > 1 else "sdca_state")
            for i in range(num_shards)]

    def _shard(self, keys):
        return tf.cast(tf.math.floormod(keys[:, 1], len(self._tables)), tf.int32)

    def lookup(self, keys):
        if len(self._tables) == 1:
            return self._tables[0].lookup(keys)
        shard = self._shard(keys)
        positions = tf.dynamic_partition(tf.range(tf.shape(keys)[0]), shard, len(self._tables))
        found = [table.lookup(part) for table, part in
                 zip(self._tables, tf.dynamic_partition(keys, shard, len(self._tables)))]
        return tf.dynamic_stitch(positions, found)

    def insert(self, keys, values):
        if len(self._tables) == 1:
            return self._tables[0].insert(keys, values)
        shard = self._shard(keys)
        n = len(self._tables)
        return tf.group(*[table.insert(k, v) for table, k, v in
                          zip(self._tables, tf.dynamic_partition(keys, shard, n),
                              tf.dynamic_partition(values, shard, n))])

    def size(self):
        return tf.add_n([table.size() for table in self._tables])


def _example_weights(features, weight_column, batch_size):
    if weight_column is None:
        return tf.ones([batch_size], tf.float32)
    key = weight_column if isinstance(weight_column, str) else weight_column.key
    weights = tf.cast(features[key], tf.float32)
    normalizer = getattr(weight_column, "normalizer_fn", None)
    if normalizer is not None:
        weights = normalizer(weights)
    return tf.reshape(weights, [-1])


def _train_op(sdca, head, feature_columns, cols_to_vars, features, labels, logits):
    from tensorflow.python.feature_column import feature_column_v2 as fc

    if sdca._example_id_column not in features:
        raise ValueError(f"LinearSDCA: the features have no example_id_column {sdca._example_id_column!r} (a string "
                         f"feature with one id per example); features: {sorted(features)}")
    loss_type = _loss_type(head)
    targets = tf.reshape(head._processed_labels(logits, labels), [-1])
    batch_size = tf.shape(targets)[0]
    cache = fc.FeatureTransformationCache(features)
    sparse, sparse_weights, dense, dense_weights = [], [], [], []
    for column in sorted(feature_columns, key=lambda c: c.name):
        if isinstance(column, fc.CategoricalColumn):
            pair = column.get_sparse_tensors(cache, None)
            sparse.append(_unique_sparse_ids(pair.id_tensor, pair.weight_tensor))
            sparse_weights.append(_parts(cols_to_vars[column]))
        elif isinstance(column, fc.DenseColumn):
            if column.variable_shape.ndims != 1:
                raise ValueError(f"Column {type(column).__name__} has rank {column.variable_shape.ndims}, larger "
                                 f"than 1.")
            dense.append(tf.cast(column.get_dense_tensor(cache, None), tf.float32))
            dense_weights.append(_parts(cols_to_vars[column]))
        else:
            raise ValueError(f"LinearSDCA does not support column type {type(column).__name__}.")
    dense.append(tf.ones([batch_size, 1]))
    dense_weights.append(_parts(cols_to_vars["bias"]))

    unshrunk_sparse = [_unshrunk_copies(parts) for parts in sparse_weights]
    unshrunk_dense = [_unshrunk_copies(parts) for parts in dense_weights]
    with tf.name_scope("sdca"):
        table = _StateTable(sdca._num_table_shards or 1)
    with tf.name_scope("sdca/minimize"):
        keys = tf.raw_ops.SdcaFprint(input=tf.reshape(tf.convert_to_tensor(features[sdca._example_id_column]), [-1]))
        state = table.lookup(keys)
        batch_rows = [tf.unique(ids)[0] for _, ids, _ in sparse]
        gathered = [tf.gather(_whole(parts), rows) for parts, rows in zip(unshrunk_sparse, batch_rows)]
        new_state, sparse_deltas, dense_deltas = tf.raw_ops.SdcaOptimizerV2(
            sparse_example_indices=[e for e, _, _ in sparse], sparse_feature_indices=[i for _, i, _ in sparse],
            sparse_feature_values=[v for _, _, v in sparse], dense_features=dense,
            example_weights=_example_weights(features, head._weight_column, batch_size),
            example_labels=targets, sparse_indices=batch_rows, sparse_weights=gathered,
            dense_weights=[_whole(parts) for parts in unshrunk_dense], example_state_data=state,
            loss_type=loss_type, l1=sdca._symmetric_l1_regularization, l2=sdca._symmetric_l2_regularization,
            num_loss_partitions=sdca._num_loss_partitions, num_inner_iterations=1, adaptive=sdca._adaptive)
        with tf.control_dependencies([new_state]):
            updates = [table.insert(keys, new_state)]
            for parts, rows, delta in zip(unshrunk_sparse, batch_rows, sparse_deltas):
                updates += _add_rows(parts, rows, delta)
            for parts, delta in zip(unshrunk_dense, dense_deltas):
                updates += _add_all(parts, delta)
    with tf.control_dependencies(updates):
        copies = [weight.assign(copy.read_value())
                  for weights, copies_ in zip(sparse_weights + dense_weights, unshrunk_sparse + unshrunk_dense)
                  for weight, copy in zip(weights, copies_)]
    with tf.name_scope("sdca/shrink"), tf.control_dependencies(copies):
        shrinkage = sdca._symmetric_l1_regularization / sdca._symmetric_l2_regularization
        if shrinkage > 0:
            weights = [w for parts in sparse_weights + dense_weights for w in parts]
            copies = [w.assign(tf.sign(w) * tf.maximum(0.0, tf.abs(w) - shrinkage)) for w in weights]
    _v1.summary.scalar("examples_seen", table.size())
    with tf.control_dependencies(copies):
        return _v1.assign_add(_v1.train.get_or_create_global_step(), 1).op


def sdca_model_fn(features, labels, mode, head, feature_columns, sdca, partitioner=None):
    """The model_fn of a LinearClassifier/LinearRegressor/LinearEstimator whose optimizer is a LinearSDCA."""

    check_features(features)
    _loss_type(head)
    feature_columns = list(feature_columns)
    with new_trainable_variables():
        with _v1.variable_scope("linear", partitioner=partitioner):
            cols_to_vars = {}
            with feature_column_quiet():
                logits = _v1.feature_column.linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                                                         cols_to_vars=cols_to_vars)
    bias = _parts(cols_to_vars["bias"])
    weights = [v for column, parts in cols_to_vars.items() if column != "bias" for v in _parts(parts)]
    _v1.summary.scalar("bias", _whole(bias)[0])
    if weights:
        _v1.summary.scalar("fraction_of_zero_weights", fraction_of_zero(weights))
    if mode != ModeKeys.TRAIN:
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, logits=logits)
    train_op = _train_op(sdca, head, feature_columns, cols_to_vars, features, labels, logits)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, logits=logits,
                                      train_op_fn=lambda _loss: train_op)
