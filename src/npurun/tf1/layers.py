"""`tf.compat.v1.layers` for TensorFlow 2.21: TensorFlow 1's own layers, from the maintained `tf-keras` package.

Keras 3 dropped the TF 1 layers; `tf-keras` (Keras 2, maintained alongside TensorFlow) still ships them
as `tf_keras.src.legacy_tf_layers`. TensorFlow 2.21 looks for them under the name
`tf_keras.legacy_tf_layers` (its `tensorflow.python.layers.normalization`, which `tf_slim.batch_norm`
uses, imports that name), so `install_alias()` registers it. Nothing here is a copy: variable names,
`reuse`, collections (batch norm's moving statistics go to `UPDATE_OPS` only, not
`MOVING_AVERAGE_VARIABLES`, as in TF 1) are tf-keras's.

One TF 1.15 hook is adapted: subclasses of batch normalization (`tf.layers.BatchNormalization`,
`tf.keras.layers.BatchNormalization`) that override `_moments(self, inputs, reduction_axes, keep_dims)`
with TF 1.15's signature (cross-replica batch norm of official-models / EfficientNet, 12 ModelZoo
folders). tf-keras calls `_moments(..., keep_dims=..., mask=mask)`; such an override is called without
`mask` (TF 1 layers had no masked batch norm: a mask given to one is a TypeError saying so).
"""
from __future__ import annotations

import functools
import inspect
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


def _takes_mask(function) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "mask" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _tf115_moments(override):
    @functools.wraps(override)
    def _moments(self, inputs, reduction_axes, keep_dims, mask=None):
        if mask is not None:
            raise TypeError(f"{type(self).__name__}._moments(self, inputs, reduction_axes, keep_dims) has TensorFlow "
                            f"1.15's signature, which takes no mask: call the layer without mask=")
        return override(self, inputs, reduction_axes, keep_dims)

    _moments.__npurun_tf115__ = True
    return _moments


def _adapt_moments_overrides() -> None:
    """Subclasses of tf-keras's batch normalization defining a TF 1.15 `_moments` get it called as TF 1.15 did."""
    from tf_keras.src.layers.normalization import batch_normalization

    base = batch_normalization.BatchNormalizationBase
    if "__npurun_moments__" in base.__dict__:
        return
    def __init_subclass__(cls, **kwargs):
        super(base, cls).__init_subclass__(**kwargs)
        override = cls.__dict__.get("_moments")
        if override is not None and callable(override) and not _takes_mask(override):
            cls._moments = _tf115_moments(override)

    base.__init_subclass__ = classmethod(__init_subclass__)
    base.__npurun_moments__ = True


_adapt_moments_overrides()

# The public names of TF 1's tf.layers (functions and classes), as tf-keras exports them.
__all__ = [name for name in dir(_tf1_layers) if not name.startswith("_")]
globals().update({name: getattr(_tf1_layers, name) for name in __all__})
