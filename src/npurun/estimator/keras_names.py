"""Keras layer names counted per graph while model_fn builds, as tf.estimator's Keras had them.

Every Estimator call builds model_fn into a new graph, and a checkpoint written by `train()` is
read by `evaluate()`/`predict()`/export in their own graphs. Keras 2 (tf.keras up to TensorFlow
2.15, and tf-keras) counts auto-generated layer names per graph, so `Dense(10)` is `dense` in each
graph and the variable `dense/kernel` matches the checkpoint. Keras 3 (TensorFlow 2.16+'s tf.keras)
counts them for the whole process: the evaluation graph's first `Dense` became `dense_3`, and no
checkpoint restored. While model_fn runs, Keras 3's counter is swapped for one kept per graph, so
names are what tf.estimator code was written for. Keras 3 has no public hook for this (its counter
lives in `keras.src.backend.common.global_state`); without that module nothing is done.
"""
from __future__ import annotations

import collections
import contextlib
import sys
import weakref

import tensorflow as tf

_COUNTER = "object_name_uids"  # Keras 3's global_state key (keras/src/utils/naming.py)
_PER_GRAPH = weakref.WeakKeyDictionary()  # graph -> its Keras 3 name counter


@contextlib.contextmanager
def per_graph():
    """Within: Keras 3 names layers counting only those built in the current default graph."""
    state = sys.modules.get("keras.src.backend.common.global_state")  # only if Keras 3 is in use
    if state is None or tf.executing_eagerly():
        yield
        return
    graph = tf.compat.v1.get_default_graph()
    counter = _PER_GRAPH.setdefault(graph, collections.defaultdict(int))
    outside = state.get_global_attribute(_COUNTER)
    state.set_global_attribute(_COUNTER, counter)
    try:
        yield
    finally:
        state.set_global_attribute(_COUNTER, outside)
