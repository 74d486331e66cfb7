"""`tf.estimator.inputs.numpy_input_fn` and `pandas_input_fn` on tf.data, with tf.estimator's rules
and messages.

The returned input_fn gives an Estimator a `tf.data.Dataset` (whose position npurun's checkpoints
keep and device loops read); called by anyone else in a graph it returns what tf.estimator's does,
`(features, labels)` tensors (features alone without `y`) that run out with OutOfRangeError after
`num_epochs`. Batches, epochs and shuffling are tf.estimator's: `num_epochs=None` repeats forever,
otherwise the last batch may be smaller; `queue_capacity` is the shuffle buffer; `num_threads` is
accepted.
"""
from __future__ import annotations

import collections


def _columns(x):
    """x as an ordered dict of columns (tf.estimator's checks and words)."""
    import numpy as np

    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items(), key=lambda item: item[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({"__direct_np_input__": x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def _check(x, y):
    features = _columns(x)
    targets = None
    if isinstance(y, dict):
        if not y:
            raise ValueError("y cannot be empty dict, use None instead.")
        targets = collections.OrderedDict(sorted(y.items(), key=lambda item: item[0]))
        duplicates = set(features) & set(targets)
        if duplicates:
            raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: {duplicates}")
    elif y is not None:
        targets = collections.OrderedDict({"__target__": y})
    columns = list(features.values()) + list((targets or {}).values())
    if len({len(column) for column in columns}) != 1:
        raise ValueError(f"Length of tensors in x and y is mismatched. All elements in x and y must have the same "
                         f"length.\nShapes in x: { {k: v.shape for k, v in features.items()} }\n"
                         f"Shapes in y: {None if targets is None else {k: v.shape for k, v in targets.items()} }\n")


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1):
    """An input_fn feeding the arrays `x` (an array or a dict of arrays) and `y` (likewise, or None);
    see the module doc. `shuffle` must be given as a bool."""
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided and explicitly set as boolean (it is recommended to set it as "
                         f"True for training); got {shuffle}")

    def input_fn():
        _check(x, y)
        return _batches(dict(x) if isinstance(x, dict) else x, y, batch_size, num_epochs, shuffle, queue_capacity)

    return input_fn


def _batches(features, labels, batch_size, num_epochs, shuffle, queue_capacity):
    """The Dataset of (features, labels) batches for an Estimator, its tensors for anyone else."""
    import tensorflow as tf

    from ..estimator.inputs import called_by_estimator

    dataset = tf.data.Dataset.from_tensor_slices(features if labels is None else (features, labels))
    if shuffle:
        dataset = dataset.shuffle(max(int(queue_capacity), 1))
    dataset = dataset.repeat(num_epochs).batch(batch_size).prefetch(1)
    if called_by_estimator() or tf.executing_eagerly():
        return dataset
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1,
                    target_column="target"):
    """An input_fn feeding the columns of the DataFrame `x` as features and the Series (or DataFrame) `y`
    as labels (a dict by column when a DataFrame); otherwise as numpy_input_fn (see the module doc).
    tf.estimator's rules: `shuffle` given as a bool, `target_column` a string not among x's columns,
    x and y with the same index; `queue_capacity=None` is 4 (shuffling) or 1 times the rows."""
    try:
        import pandas as pd
    except ImportError:
        raise TypeError("pandas_input_fn should not be called without pandas installed") from None
    import numpy as np

    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided and explicitly set as boolean (it is recommended to set it as "
                         f"True for training); got {shuffle}")
    if not isinstance(target_column, str):
        raise TypeError("target_column must be a string type")
    if y is not None:
        if target_column in x:
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame already has a column "
                             f"with that name: {x.columns}")
        if not np.array_equal(x.index, y.index):
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\nIndex for y: {y.index}\n")
    if queue_capacity is None:
        queue_capacity = 4 * len(x) if shuffle else len(x)
    features = {str(column): x[column].to_numpy() for column in x.columns}
    labels = None
    if isinstance(y, pd.DataFrame):
        labels = {str(column): y[column].to_numpy() for column in y.columns}
    elif y is not None:
        labels = np.asarray(y)

    def input_fn():
        return _batches(features, labels, batch_size, num_epochs, shuffle, queue_capacity)

    return input_fn
