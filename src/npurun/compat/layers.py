"""`tf.compat.v1.layers` for TensorFlow 2.21, whose Keras 3 no longer provides it.

Thin functions on `tf.compat.v1` variables, as TF 1.x's layers behaved in graph mode: the same
argument names and defaults, the same variable names (`dense/kernel`, `dense_1/bias`,
`batch_normalization/moving_mean`, ... uniquified per graph, reused with `reuse=True`), the same
collections (trainable variables, `UPDATE_OPS` for batch-norm moving averages,
`REGULARIZATION_LOSSES` for regularizers). Arguments these functions cannot honour raise
`NotImplementedError` naming them instead of being ignored.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1


def _pair(value, what):
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints; got {value!r}")
    return value


def _float_input(inputs):
    inputs = tf.convert_to_tensor(inputs)
    return inputs if inputs.dtype.is_floating else tf.cast(inputs, tf.float32)


def _padding(padding):
    if padding.lower() not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same'; got {padding!r}")
    return padding.upper()


def _data_format(data_format):
    formats = {"channels_last": "NHWC", "channels_first": "NCHW"}
    if data_format not in formats:
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first'; got {data_format!r}")
    return formats[data_format]


def _activity(outputs, activity_regularizer):
    if activity_regularizer is not None:
        _v1.add_to_collection(_v1.GraphKeys.REGULARIZATION_LOSSES, activity_regularizer(outputs))
    return outputs


def _refuse(**arguments):
    for name, value in arguments.items():
        if value:
            raise NotImplementedError(f"tf.compat.v1.layers (npurun): argument {name}={value!r} is not supported")


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=_v1.zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
          reuse=None):
    """Densely connected layer: `activation(inputs @ kernel + bias)` over the last axis."""
    inputs = _float_input(inputs)
    in_dim = inputs.shape[-1]
    if in_dim is None:
        raise ValueError("dense: the last dimension of the inputs must be known")
    with _v1.variable_scope(name, default_name="dense", reuse=reuse):
        kernel = _v1.get_variable("kernel", [int(in_dim), units], dtype=inputs.dtype, initializer=kernel_initializer,
                                  regularizer=kernel_regularizer, constraint=kernel_constraint, trainable=trainable)
        if inputs.shape.rank == 2:
            outputs = tf.matmul(inputs, kernel)
        else:
            outputs = tf.tensordot(inputs, kernel, [[inputs.shape.rank - 1], [0]])
        if use_bias:
            bias = _v1.get_variable("bias", [units], dtype=inputs.dtype, initializer=bias_initializer,
                                    regularizer=bias_regularizer, constraint=bias_constraint, trainable=trainable)
            outputs = tf.nn.bias_add(outputs, bias)
        if activation is not None:
            outputs = activation(outputs)
        return _activity(outputs, activity_regularizer)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=_v1.zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
           activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
           reuse=None):
    """2-D convolution layer."""
    inputs = _float_input(inputs)
    fmt = _data_format(data_format)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilation_rate, "dilation_rate")
    channels = inputs.shape[-1] if fmt == "NHWC" else inputs.shape[1]
    if channels is None:
        raise ValueError("conv2d: the channel dimension of the inputs must be known")
    stride_list = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
    dilation_list = [1, dh, dw, 1] if fmt == "NHWC" else [1, 1, dh, dw]
    with _v1.variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = _v1.get_variable("kernel", [kh, kw, int(channels), filters], dtype=inputs.dtype,
                                  initializer=kernel_initializer, regularizer=kernel_regularizer,
                                  constraint=kernel_constraint, trainable=trainable)
        outputs = tf.nn.conv2d(inputs, kernel, strides=stride_list, padding=_padding(padding), data_format=fmt,
                               dilations=dilation_list)
        if use_bias:
            bias = _v1.get_variable("bias", [filters], dtype=inputs.dtype, initializer=bias_initializer,
                                    regularizer=bias_regularizer, constraint=bias_constraint, trainable=trainable)
            outputs = tf.nn.bias_add(outputs, bias, data_format=fmt)
        if activation is not None:
            outputs = activation(outputs)
        return _activity(outputs, activity_regularizer)


def _pooling(pool, default_name, inputs, pool_size, strides, padding, data_format, name):
    fmt = _data_format(data_format)
    ph, pw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides, "strides")
    ksize = [1, ph, pw, 1] if fmt == "NHWC" else [1, 1, ph, pw]
    stride_list = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
    with _v1.variable_scope(name, default_name=default_name):
        return pool(tf.convert_to_tensor(inputs), ksize=ksize, strides=stride_list, padding=_padding(padding),
                    data_format=fmt)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """2-D max pooling."""
    return _pooling(tf.nn.max_pool2d, "max_pooling2d", inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """2-D average pooling."""
    return _pooling(tf.nn.avg_pool2d, "average_pooling2d", inputs, pool_size, strides, padding, data_format, name)


def _when_training(training, if_training, otherwise):
    """`if_training()` or `otherwise()`, chosen now for a Python bool, in the graph for a tensor."""
    if isinstance(training, (bool, np.bool_)):
        return if_training() if training else otherwise()
    return tf.cond(tf.cast(training, tf.bool), if_training, otherwise)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Inverted dropout of a fraction `rate` of the inputs when `training` (a bool or a bool tensor)."""
    with _v1.variable_scope(name, default_name="dropout"):
        inputs = tf.convert_to_tensor(inputs)
        if isinstance(rate, (int, float)) and rate == 0:
            return tf.identity(inputs)
        return _when_training(training, lambda: tf.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed),
                              lambda: tf.identity(inputs))


def flatten(inputs, name=None, data_format="channels_last"):
    """Flatten every dimension but the first (channels-first inputs are made channels-last first, as TF 1.x did)."""
    _data_format(data_format)
    with _v1.variable_scope(name, default_name="flatten"):
        inputs = tf.convert_to_tensor(inputs)
        if data_format == "channels_first" and inputs.shape.rank is not None and inputs.shape.rank > 2:
            inputs = tf.transpose(inputs, [0, *range(2, inputs.shape.rank), 1])
        rest = inputs.shape[1:]
        if rest.is_fully_defined():
            return tf.reshape(inputs, [-1, int(np.prod(rest.as_list(), dtype=np.int64))])
        return tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]))


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=_v1.zeros_initializer(), gamma_initializer=_v1.ones_initializer(),
                        moving_mean_initializer=_v1.zeros_initializer(),
                        moving_variance_initializer=_v1.ones_initializer(), beta_regularizer=None,
                        gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, training=False,
                        trainable=True, name=None, reuse=None, renorm=False, renorm_clipping=None,
                        renorm_momentum=0.99, fused=None, virtual_batch_size=None, adjustment=None):
    """Batch normalisation over every axis but `axis`.

    With `training` True (or a tensor that is true) it normalises with the batch statistics and adds
    the moving-average updates to `tf.compat.v1.GraphKeys.UPDATE_OPS` (run them with the train op, as
    TF 1.x required); otherwise it uses the moving statistics. `fused` is accepted (the computation is
    the same); `renorm`, `virtual_batch_size` and `adjustment` raise NotImplementedError.
    """
    _refuse(renorm=renorm, renorm_clipping=renorm_clipping, virtual_batch_size=virtual_batch_size,
            adjustment=adjustment)
    inputs = _float_input(inputs)
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError("batch_normalization: the rank of the inputs must be known")
    axis = axis % rank
    channels = inputs.shape[axis]
    if channels is None:
        raise ValueError("batch_normalization: the normalised axis must have a known size")
    reduce_axes = [a for a in range(rank) if a != axis]
    param_shape = [1] * rank
    param_shape[axis] = int(channels)
    with _v1.variable_scope(name, default_name="batch_normalization", reuse=reuse):
        def variable(var_name, initializer, trainable_, regularizer=None, constraint=None, collections=None):
            return _v1.get_variable(var_name, [int(channels)], dtype=tf.float32, initializer=initializer,
                                    regularizer=regularizer, constraint=constraint, trainable=trainable_,
                                    collections=collections)

        gamma = variable("gamma", gamma_initializer, trainable, gamma_regularizer, gamma_constraint) if scale else None
        beta = variable("beta", beta_initializer, trainable, beta_regularizer, beta_constraint) if center else None
        moving = [_v1.GraphKeys.GLOBAL_VARIABLES, _v1.GraphKeys.MOVING_AVERAGE_VARIABLES]
        moving_mean = variable("moving_mean", moving_mean_initializer, False, collections=moving)
        moving_variance = variable("moving_variance", moving_variance_initializer, False, collections=moving)

        x = tf.cast(inputs, tf.float32)

        def normalise(mean, variance):
            def shaped(t):
                return None if t is None else tf.reshape(t, param_shape)

            y = tf.nn.batch_normalization(x, shaped(mean), shaped(variance), shaped(beta), shaped(gamma), epsilon)
            return tf.cast(y, inputs.dtype)

        def with_batch_statistics():
            mean, variance = tf.nn.moments(x, reduce_axes)
            return normalise(mean, variance), mean, variance

        def with_moving_statistics():
            return normalise(moving_mean, moving_variance), tf.identity(moving_mean), tf.identity(moving_variance)

        if isinstance(training, (bool, np.bool_)) and not training:
            return normalise(moving_mean, moving_variance)
        outputs, mean, variance = _when_training(training, with_batch_statistics, with_moving_statistics)
        decay = 1.0 - momentum
        # With moving statistics chosen (training false at run time) these updates leave them unchanged.
        for var, value in ((moving_mean, mean), (moving_variance, variance)):
            update = _v1.assign_sub(var, (var - value) * decay)
            _v1.add_to_collection(_v1.GraphKeys.UPDATE_OPS, update)
        return outputs
