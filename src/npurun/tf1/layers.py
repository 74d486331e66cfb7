"""`tf.compat.v1.layers` for TensorFlow 2.21: TensorFlow 1's own layers, from the maintained `tf-keras` package.

Keras 3 dropped the TF 1 layers; `tf-keras` (Keras 2, maintained alongside TensorFlow) still ships them
as `tf_keras.src.legacy_tf_layers`. TensorFlow 2.21 looks for them under the name
`tf_keras.legacy_tf_layers` (its `tensorflow.python.layers.normalization`, which `tf_slim.batch_norm`
uses, imports that name), so `install_alias()` registers it. Nothing here is a copy: variable names,
`reuse`, collections (batch norm's moving statistics go to `UPDATE_OPS` only, not
`MOVING_AVERAGE_VARIABLES`, as in TF 1) are tf-keras's.
"""
from __future__ import annotations

import sys

import tf_keras.src.legacy_tf_layers as legacy_tf_layers
from tf_keras.api._v1.keras.__internal__.legacy import layers as _tf1_layers

ALIAS = "tf_keras.legacy_tf_layers"


def install_alias() -> None:
    """Make `tf_keras.legacy_tf_layers` importable (TensorFlow 2.21 imports that name); idempotent."""
    import tf_keras

    sys.modules.setdefault(ALIAS, legacy_tf_layers)
    for part in ("base", "core", "convolutional", "normalization", "pooling"):
        module = sys.modules.get(f"tf_keras.src.legacy_tf_layers.{part}")
        if module is not None:
            sys.modules.setdefault(f"{ALIAS}.{part}", module)
    if not hasattr(tf_keras, "legacy_tf_layers"):
        tf_keras.legacy_tf_layers = legacy_tf_layers


install_alias()

# The public names of TF 1's tf.layers (functions and classes), as tf-keras exports them.
__all__ = [name for name in dir(_tf1_layers) if not name.startswith("_")]
globals().update({name: getattr(_tf1_layers, name) for name in __all__})
