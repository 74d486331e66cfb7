"""model_fn's training step as one XLA computation (jit_compile="true", mix_compile_mode=False).

The step (model_fn, its optimizer, the global step update) is built by
`runtime.compilation.compile_step` over the input tensors; what leaves the computation is the
loss (running it runs the step) and the values of the host call: model_fn's `host_call` and the
summaries it made, which are lifted to the host (host_values.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import tensorflow as tf

from ..runtime import compilation
from . import host_values
from .spec import ModeKeys


@dataclass
class CompiledStep:
    """loss: a tensor whose run runs the step; host_call: (fn, one step's tensors) or None;
    host_values: the computation's outputs for those tensors."""

    loss: Any
    host_call: Optional[tuple]
    host_values: List[Any]


def tensor_leaves(structure):
    """(leaves of `structure`, with composite tensors expanded; the positions of the tensors among
    them). Non-tensor leaves (None labels, Python values) stay outside a computation."""
    leaves = tf.nest.flatten(structure, expand_composites=True)
    return leaves, [k for k, leaf in enumerate(leaves) if isinstance(leaf, tf.Tensor)]


def repack(structure, leaves, positions, tensors):
    """`structure` with the tensor leaves at `positions` replaced by `tensors`."""
    values = list(leaves)
    for k, tensor in zip(positions, tensors):
        values[k] = tensor
    return tf.nest.pack_sequence_as(structure, values, expand_composites=True)


def build(estimator, options, features, labels, compile_fn: Callable = None):
    """Build the compiled step; returns (the EstimatorSpec model_fn returned, CompiledStep)."""
    compile_fn = compile_fn or (lambda fn, inputs: compilation.compile_step(options, fn, inputs))
    structure = (features, labels)
    leaves, positions = tensor_leaves(structure)
    captured = {}

    def computation(*tensors):
        f, l = repack(structure, leaves, positions, tensors)
        with host_values.lifting(static_shapes=False) as lifted:
            spec = estimator.call_model_fn(f, l, ModeKeys.TRAIN)
        host_call = host_values.combine(spec.host_call, lifted.host_call(after=spec.train_op))
        captured.update(spec=spec, host_call=host_call)
        with tf.control_dependencies([spec.train_op]):
            return [tf.identity(spec.loss)] + [tf.identity(t) for t in (host_call[1] if host_call else [])]

    outputs = compile_fn(computation, [leaves[k] for k in positions])
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return captured["spec"], CompiledStep(outputs[0], captured["host_call"], outputs[1:])
