"""`tf.contrib.distributions.percentile` as TensorFlow 1.15 computed it.

TF 1.15's contrib.distributions re-exported the core `tf.distributions` classes (Normal, Beta, Categorical,
kl_divergence, ...), which TensorFlow 2 still has as `tf.compat.v1.distributions` (the table in
`npurun.tf1.contrib` maps them there). `percentile`, a contrib-only sample statistic (SfMLearner-style depth
scripts threshold a reprojection error at its 99th percentile), is written here: the value of rank
`round((d - 1) * (1 - q / 100))` in the sample sorted in decreasing order, over `axis` (all of `x` when None),
with TF 1.15's interpolations 'nearest' (default), 'lower' and 'higher'. The gradient reaches the chosen
elements (through top_k), as in TF 1.15.
"""
from __future__ import annotations

_INTERPOLATIONS = ("nearest", "lower", "higher")


def percentile(x, q, axis=None, interpolation=None, keep_dims=False, validate_args=False, name=None):
    import tensorflow as tf

    v1 = tf.compat.v1
    if interpolation is None:
        interpolation = "nearest"
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"tf.contrib.distributions.percentile: interpolation={interpolation!r} is not "
                         f"allowed; allowed: {', '.join(_INTERPOLATIONS)}")
    with v1.name_scope(name, "percentile", [x, q]):
        x = tf.convert_to_tensor(x, name="x")
        q = tf.cast(q, tf.float64)
        if q.shape.ndims not in (None, 0):
            raise ValueError(f"tf.contrib.distributions.percentile: q must be a scalar, got shape {q.shape}")
        if validate_args:
            with tf.control_dependencies([v1.assert_rank(q, 0), v1.assert_greater_equal(q, tf.constant(0., tf.float64)),
                                          v1.assert_less_equal(q, tf.constant(100., tf.float64))]):
                q = tf.identity(q)
        ndims = x.shape.ndims
        if axis is None:
            y = tf.reshape(x, [-1])
            axes = None
        else:
            if ndims is None:
                raise ValueError("tf.contrib.distributions.percentile: x needs a known rank when axis is given")
            axes = sorted({int(a) % ndims for a in ([axis] if isinstance(axis, int) else list(axis))})
            front = [i for i in range(ndims) if i not in axes]
            permed = tf.transpose(x, front + axes)
            shape = tf.shape(x)
            static = x.shape.as_list()
            front_shape = [static[i] if static[i] is not None else shape[i] for i in front]
            y = tf.reshape(permed, tf.stack(front_shape + [-1]) if front_shape else [-1])
        d = tf.shape(y)[-1]
        position = tf.cast(d - 1, tf.float64) * (1. - q / 100.)
        rounding = {"nearest": tf.round, "lower": tf.math.ceil, "higher": tf.math.floor}[interpolation]
        index = tf.clip_by_value(tf.cast(rounding(position), tf.int32), 0, d - 1)
        decreasing = tf.nn.top_k(y, k=d).values
        result = decreasing[..., index]
        if keep_dims:
            if axes is None:
                result = tf.reshape(result, [1] * (ndims if ndims is not None else 0)) if ndims else result
            else:
                for a in axes:
                    result = tf.expand_dims(result, a)
        return result
