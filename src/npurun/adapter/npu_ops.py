"""`npu_bridge.estimator.npu_ops` names implemented here (see the coverage table for the rest)."""
from __future__ import annotations

import numbers


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    """Inverted dropout: each element is kept with probability `keep_prob` and scaled by 1/keep_prob.

    The adapter's `npu_ops.dropout(x, keep_prob, noise_shape=None, seed=None, name=None)`, with
    `tf.nn.dropout`'s semantics (`rate = 1 - keep_prob`): `x` must be floating point, a numeric
    `keep_prob` must lie in (0, 1] (`ValueError` otherwise), `keep_prob == 1.0` returns `x` itself,
    `noise_shape` broadcasts one keep/drop decision over dimensions of size 1, and `seed` combines
    with the graph seed as TensorFlow's random ops do. `keep_prob` may be a scalar tensor.
    """
    import tensorflow as tf

    x = tf.convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(f"npu_ops.dropout: x must be a floating point tensor (it is scaled); got {x.dtype.name}")
    if isinstance(keep_prob, numbers.Real) and not isinstance(keep_prob, bool):
        if not 0 < keep_prob <= 1:
            raise ValueError(f"npu_ops.dropout: keep_prob must be a scalar tensor or a number in (0, 1]; "
                             f"got {keep_prob!r}")
        if keep_prob == 1:
            return x
    with tf.name_scope(name or "dropout"):
        keep = tf.cast(keep_prob, x.dtype)
        return tf.nn.dropout(x, rate=1 - keep, noise_shape=noise_shape, seed=seed)


def initialize_system(name=None):
    """A no-op op standing for the adapter's NPU system initialisation (nothing to open here)."""
    import tensorflow as tf

    return tf.no_op(name=name or "NPUInit")


def shutdown_system(name=None):
    """A no-op op standing for the adapter's NPU system shutdown (nothing to close here)."""
    import tensorflow as tf

    return tf.no_op(name=name or "NPUShutdown")


# ---- npu_bridge.estimator.npu_unary_ops.npu_unary_ops ----------------------------------------------
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2 / pi)
_GELU_CUBIC = 0.044715


def gelu(x, name=None):
    """GELU, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))).

    The formula of the adapter's fused Gelu kernel (and of BERT's `gelu`), written with TensorFlow
    ops; TensorFlow differentiates it (the same values as the adapter's `gelu_grad`).
    """
    import tensorflow as tf

    with tf.name_scope(name or "Gelu"):
        x = tf.convert_to_tensor(x, name="x")
        inner = _SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x)
        return 0.5 * x * (1.0 + tf.tanh(inner))


def gelu_grad(dy, x, y=None, name=None):
    """The adapter's GeluGrad: dy times the derivative of `gelu` at x (`y`, gelu(x), is not needed)."""
    import tensorflow as tf

    with tf.name_scope(name or "GeluGrad"):
        x = tf.convert_to_tensor(x, name="x")
        tanh = tf.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x))
        slope = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x * x)
        return dy * (0.5 * (1.0 + tanh) + 0.5 * x * (1.0 - tanh * tanh) * slope)


def randomchoicewithmask(x, count, seed=0, seed2=0, name=None):
    """The adapter's `npu_cpu_ops.randomchoicewithmask(x, count, seed=0, seed2=0)` (its RandomChoiceWithMask
    AI CPU kernel): up to `count` of the true elements of the boolean tensor `x` (rank >= 1), chosen at random.

    Returns `(y, mask)`: `y` int32 [count, rank(x)] the chosen elements' indices (rows past the number of true
    elements are zeros), `mask` bool [count] True on the rows that are real. The true elements' indices are
    shuffled by TensorFlow's RandomShuffle with the same `seed` / `seed2` attributes (both 0: a new order each
    run) and the first `count` are kept.
    """
    import tensorflow as tf

    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
        raise ValueError(f"npu_cpu_ops.randomchoicewithmask: count must be a positive int; got {count!r}")
    x = tf.convert_to_tensor(x, name="x")
    if x.dtype != tf.bool:
        raise TypeError(f"npu_cpu_ops.randomchoicewithmask: x must be a bool tensor; got {x.dtype.name}")
    rank = x.shape.rank
    if rank is not None and rank < 1:
        raise ValueError("npu_cpu_ops.randomchoicewithmask: x must have rank >= 1; got a scalar")
    count = int(count)
    with tf.name_scope(name or "RandomChoiceWithMask"):
        indices = tf.cast(tf.where(x), tf.int32)  # [number of true elements, rank]
        shuffled = tf.raw_ops.RandomShuffle(value=indices, seed=int(seed), seed2=int(seed2))
        chosen = shuffled[:count]
        found = tf.shape(chosen)[0]
        y = tf.pad(chosen, [[0, count - found], [0, 0]])
        y.set_shape([count, rank])
        mask = tf.range(count) < found
    return y, mask
