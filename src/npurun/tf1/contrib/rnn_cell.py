"""`tensorflow.contrib.rnn.python.ops.rnn_cell` / `.core_rnn_cell` of TensorFlow 1.15, as scripts import them.

Recommendation models (DIEN's attention GRU cells, 2 folders; 3 more import `core_rnn_cell`) build their own
cells on TF 1.15's private `_Linear`: a linear map over one or more 2-D tensors, concatenated, with variables
`kernel` [sum of their widths, output_size] and `bias` [output_size] created in the variable scope it is
built in (initialised by `kernel_initializer` / `bias_initializer`, the bias to zeros by default). TensorFlow 2
removed it with contrib, and no maintained package has it, so it is written here (with its function form
`_linear`); the public cells are `tf.compat.v1.nn.rnn_cell`'s.
"""
from __future__ import annotations

import tensorflow as tf

_v1 = tf.compat.v1

_CELLS = ("RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell", "LSTMStateTuple",
          "DropoutWrapper", "ResidualWrapper", "DeviceWrapper")
globals().update({name: getattr(_v1.nn.rnn_cell, name) for name in _CELLS})


class _Linear:
    """TF 1.15's `_Linear(args, output_size, build_bias, bias_initializer=None, kernel_initializer=None)`:
    the variables are made when it is constructed, in the current variable scope; calling it with tensors of
    the same widths gives `concat(args, 1) @ kernel (+ bias)`."""

    def __init__(self, args, output_size, build_bias, bias_initializer=None, kernel_initializer=None):
        self._build_bias = build_bias
        if args is None or (isinstance(args, (list, tuple)) and not args):
            raise ValueError("`args` must be specified")
        self._is_sequence = isinstance(args, (list, tuple))
        args = list(args) if self._is_sequence else [args]
        total = 0
        for arg in args:
            shape = arg.get_shape()
            if shape.ndims != 2:
                raise ValueError(f"linear is expecting 2D arguments: {[a.get_shape() for a in args]}")
            if shape.dims[1].value is None:
                raise ValueError(f"linear expects shape[1] to be provided for shape {shape}, but saw None")
            total += shape.dims[1].value
        dtype = args[0].dtype
        with _v1.variable_scope(_v1.get_variable_scope()) as outer:
            self._weights = _v1.get_variable("kernel", [total, output_size], dtype=dtype,
                                             initializer=kernel_initializer)
            if build_bias:
                with _v1.variable_scope(outer) as inner:
                    inner.set_partitioner(None)
                    if bias_initializer is None:
                        bias_initializer = _v1.constant_initializer(0.0, dtype=dtype)
                    self._biases = _v1.get_variable("bias", [output_size], dtype=dtype,
                                                    initializer=bias_initializer)

    def __call__(self, args):
        args = list(args) if self._is_sequence else [args]
        value = args[0] if len(args) == 1 else tf.concat(args, 1)
        result = tf.matmul(value, self._weights)
        return tf.nn.bias_add(result, self._biases) if self._build_bias else result


def _linear(args, output_size, bias, bias_initializer=None, kernel_initializer=None):
    """TF 1.15's function form: `_Linear(...)(args)` in one call."""
    return _Linear(args, output_size, bias, bias_initializer, kernel_initializer)(args)


__all__ = [*_CELLS, "_Linear", "_linear"]
