"""`npu_device.train.optimizer.NpuLossScaleOptimizer`: Keras loss scaling with the adapter's rules.

Rules:
- `NpuLossScaleOptimizer(inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None)`
  is a `tf.keras.mixed_precision.LossScaleOptimizer` (the Keras of tf.keras here: tf-keras under
  `npurun run`), so Keras `fit` scales the loss and unscales the gradients as for that class.
- A step whose gradients hold inf or NaN applies no update and only advances `iterations`, for
  dynamic and fixed scales alike (Keras itself skips only with a dynamic scale); a dynamic scale
  is then halved (not below 1), and doubled after `dynamic_growth_steps` finite steps (Keras').
- `last_step_finite`: a bool variable, whether the last step's gradients were finite.
- With several ranks the check reads the gradients as they are given: wrapped in
  `npu_distributed_keras_optimizer_wrapper`, they are the all-reduced ones, so every rank decides alike.
"""
from __future__ import annotations

import tensorflow as tf


def _all_finite(grads):
    checks = [tf.reduce_all(tf.math.is_finite(g)) for g in grads if g is not None]
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


def _build_slots(optimizer, variables) -> None:
    # Slots must exist before a conditional update: TensorFlow cannot create variables inside tf.cond.
    if hasattr(optimizer, "build") and not getattr(optimizer, "_built", True) is True:
        optimizer.build(variables)
    elif hasattr(optimizer, "_create_all_weights"):
        optimizer._create_all_weights(variables)  # noqa: SLF001 - Keras 2's OptimizerV2


class NpuLossScaleOptimizer:
    """Builds the Keras LossScaleOptimizer of `inner_optimizer` with the adapter's overflow rule."""

    def __new__(cls, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None):
        kwargs = {}
        if initial_scale is not None:
            kwargs["initial_scale"] = initial_scale
        if dynamic_growth_steps is not None:
            kwargs["dynamic_growth_steps"] = dynamic_growth_steps
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, dynamic=dynamic, **kwargs)
        finite_flag = tf.Variable(False, trainable=False, name="npu_last_step_finite", dtype=tf.bool)
        original = optimizer.apply_gradients
        inner = optimizer.inner_optimizer

        def apply_gradients(grads_and_vars, *args, **kwargs):
            grads_and_vars = [(g, v) for g, v in grads_and_vars]
            finite = _all_finite([g for g, _ in grads_and_vars])
            finite_flag.assign(finite)
            if dynamic:
                return original(grads_and_vars, *args, **kwargs)  # Keras skips and rescales itself
            _build_slots(inner, [v for _, v in grads_and_vars])

            def apply():
                original(grads_and_vars, *args, **kwargs)
                return tf.constant(True)

            def skip():
                optimizer.iterations.assign_add(1)
                return tf.constant(False)

            if tf.executing_eagerly():
                return apply() if bool(finite) else skip()
            return tf.cond(finite, apply, skip)

        optimizer.apply_gradients = apply_gradients
        optimizer.__dict__["_npu_last_step_finite"] = finite_flag
        try:
            type(optimizer).last_step_finite  # noqa: B018
        except AttributeError:
            type(optimizer).last_step_finite = property(lambda self: self.__dict__["_npu_last_step_finite"])
        return optimizer
