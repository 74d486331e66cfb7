"""`npu_device.ops` and the kernels of `npu_device.gen_npu_ops` that scripts call, with TensorFlow ops.

Rules (each is the adapter's kernel's documented computation):
- `fast_gelu(features)`: x * sigmoid(1.702 x), i.e. x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|)),
  CANN's FastGelu; `fast_gelu_grad(gradients, features)` its derivative times the gradient.
  TensorFlow differentiates `fast_gelu` itself (same result as fast_gelu_grad).
- `fused_layer_norm(x, gamma, beta, begin_norm_axis=0, begin_params_axis=0, epsilon=1e-7)`:
  (y, mean, variance), normalising over the axes from begin_norm_axis on; mean and variance keep
  those axes as 1 (the kernel's output shape); gamma and beta broadcast from begin_params_axis on.
  `fused_layer_norm_grad(dy, x, variance, mean, gamma)`: (pd_x, pd_gamma, pd_beta), by differentiating it.
- `drop_out_gen_mask(shape, prob, seed=0, seed2=0)` / `drop_out_do_mask(x, mask, keep_prob)`:
  a uint8 keep mask of one byte per element (the NPU packs bits; scripts only pass it on) and
  x * mask / keep_prob. `drop_out_gen_mask_v3` / `drop_out_do_mask_v3` are the same.
- `ops.gelu(x)`: as the adapter: TensorFlow's exact gelu when executing eagerly, fast_gelu in a
  graph (tf.function, Keras `fit`), and a Keras layer around fast_gelu for a Keras functional-API
  symbolic input.
"""
from __future__ import annotations

import tensorflow as tf

_FAST_GELU = 1.702


def fast_gelu(features, name=None):
    with tf.name_scope(name or "FastGelu"):
        x = tf.convert_to_tensor(features)
        return x * tf.sigmoid(tf.cast(_FAST_GELU, x.dtype) * x)


def fast_gelu_grad(gradients, features, name=None):
    with tf.name_scope(name or "FastGeluGrad"):
        x = tf.convert_to_tensor(features)
        s = tf.sigmoid(tf.cast(_FAST_GELU, x.dtype) * x)
        return gradients * (s + tf.cast(_FAST_GELU, x.dtype) * x * s * (1 - s))


def fast_gelu_v2(features, name=None):
    return fast_gelu(features, name=name or "FastGeluV2")


def _norm_axes(x, begin_norm_axis: int) -> list:
    rank = x.shape.rank
    axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
    if not 0 <= axis < rank:
        raise ValueError(f"fused_layer_norm: begin_norm_axis={begin_norm_axis} is invalid for rank {rank}")
    return list(range(axis, rank))


def fused_layer_norm(x, gamma, beta, begin_norm_axis=0, begin_params_axis=0, epsilon=1e-7, name=None):
    with tf.name_scope(name or "FusedLayerNorm"):
        x = tf.convert_to_tensor(x)
        mean, variance = tf.nn.moments(x, _norm_axes(x, begin_norm_axis), keepdims=True)
        y = (x - mean) * tf.math.rsqrt(variance + tf.cast(epsilon, x.dtype)) * gamma + beta
        return y, mean, variance


def fused_layer_norm_grad(dy, x, variance, mean, gamma, name=None):
    """The gradients of fused_layer_norm; its normalised axes are read from `mean`'s shape (the trailing 1s),
    its epsilon is the default (the kernel takes none)."""
    with tf.name_scope(name or "FusedLayerNormGrad"):
        x, gamma = tf.convert_to_tensor(x), tf.convert_to_tensor(gamma)
        dims = tf.convert_to_tensor(mean).shape.as_list()
        begin = len(dims)
        while begin > 0 and dims[begin - 1] == 1:
            begin -= 1
        begin = min(begin, len(dims) - 1)
        beta = tf.zeros_like(gamma)
        with tf.GradientTape() as tape:
            tape.watch([x, gamma, beta])
            y, _, _ = fused_layer_norm(x, gamma, beta, begin_norm_axis=begin)
        pd_x, pd_gamma, pd_beta = tape.gradient(y, [x, gamma, beta], output_gradients=dy)
        return pd_x, pd_gamma, pd_beta


def drop_out_gen_mask(shape, prob, seed=0, seed2=0, name=None):
    with tf.name_scope(name or "DropOutGenMask"):
        seeds = None if not (seed or seed2) else (int(seed), int(seed2))
        uniform = tf.random.uniform(shape, dtype=tf.float32, seed=seeds[1] if seeds else None)
        return tf.cast(uniform < tf.cast(prob, tf.float32), tf.uint8)


def drop_out_do_mask(x, mask, keep_prob, name=None):
    with tf.name_scope(name or "DropOutDoMask"):
        x = tf.convert_to_tensor(x)
        keep_prob = tf.cast(keep_prob, x.dtype)
        return x * tf.cast(tf.reshape(mask, tf.shape(x)), x.dtype) / keep_prob


drop_out_gen_mask_v3 = drop_out_gen_mask
drop_out_do_mask_v3 = drop_out_do_mask


def _is_keras_symbolic(x) -> bool:
    return any(type(v).__name__ == "KerasTensor" for v in tf.nest.flatten(x))


def gelu(x):
    """The adapter's `npu_device.ops.gelu` (module rules)."""
    if _is_keras_symbolic(x):
        return tf.keras.layers.Lambda(fast_gelu, name=None)(x)
    if tf.executing_eagerly():
        return tf.nn.gelu(x)
    return fast_gelu(x)
