"""NPULossScaleOptimizer and NPUOptimizer: a tf.compat.v1 optimizer wrapped with loss scaling.

Rules:

- `compute_gradients` multiplies the loss by the manager's current scale and divides each gradient
  by the same value (one read of the scale, so both use the same number).
- `apply_gradients` checks every gradient for inf/NaN (unless the manager is a
  `FixedLossScaleManager(enable_overflow_check=False)`), then applies the inner optimizer under a
  `tf.cond`: an overflowing step changes no variable at all, not even slots or `global_step` (the
  Ascend adapter passes `global_step` to the inner `apply_gradients` inside the same cond, so a
  skipped step is not counted as a training step), and the manager updates the scale and counts
  the skipped step. Everything is graph ops (`tf.cond`, variable assignments), so the optimizer can
  be built inside a `tf.while_loop` body (the device loop) and keeps no Python state per step.
- `NPUOptimizer(is_loss_scale=True)` needs a manager (ValueError otherwise); without loss scaling
  it only delegates (and offers the same distributed extension point).
- `is_distributed=True`: gradients and the overflow flag pass through
  `reduce_gradients_and_overflow`, which hands them to `npurun.distribute` (gradients averaged,
  the flag ANDed across ranks); with False they pass through unchanged.
- `is_tailing_optimization` is recorded in the graph (collection `TAILING_COLLECTION`) when the
  optimizer builds its update; `check_tailing_optimization(graph, config_value)` raises a
  ValueError when it differs from NPURunConfig's value.
"""
from __future__ import annotations

import warnings

import tensorflow as tf

from .loss_scale import LossScaleManager

# Downward: the distributed reduction and the tailing check live with the collectives.
from ..distribute.optimizer import TAILING_COLLECTION, check_tailing_optimization  # noqa: F401 (re-exported)

_v1 = tf.compat.v1


def _all_finite(grads) -> tf.Tensor:
    checks = []
    for grad in grads:
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        checks.append(tf.reduce_all(tf.math.is_finite(values)))
    if not checks:
        return tf.constant(True)
    return tf.reduce_all(tf.stack(checks), name="all_gradients_finite")


def _unscale(grad, scale):
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / tf.cast(scale, grad.values.dtype), grad.indices, grad.dense_shape)
    return grad / tf.cast(scale, grad.dtype)


class _LossScaledOptimizer(_v1.train.Optimizer):
    """Shared implementation: an inner optimizer plus an optional loss-scale manager."""

    def __init__(self, opt, loss_scale_manager, is_distributed, name, owner):
        if not isinstance(opt, _v1.train.Optimizer):
            raise TypeError(f"{owner}: opt must be a tf.compat.v1.train.Optimizer, got {type(opt).__name__}")
        if loss_scale_manager is not None and not isinstance(loss_scale_manager, LossScaleManager):
            raise TypeError(f"{owner}: loss_scale_manager must be a FixedLossScaleManager or an "
                            f"ExponentialUpdateLossScaleManager, got {type(loss_scale_manager).__name__}")
        if not isinstance(is_distributed, bool):
            raise TypeError(f"{owner}: is_distributed must be True or False, got {is_distributed!r}")
        super().__init__(use_locking=False, name=name or f"{owner}{type(opt).__name__}")
        self._opt = opt
        self._loss_scale_manager = loss_scale_manager
        self._is_distributed = is_distributed

    def __getattr__(self, attr):
        # Anything else (learning rate, hyper-parameters) is the inner optimizer's.
        if attr.startswith("__") or attr == "_opt":
            raise AttributeError(attr)
        return getattr(self._opt, attr)

    @property
    def loss_scale_manager(self):
        return self._loss_scale_manager

    @property
    def is_distributed(self) -> bool:
        return self._is_distributed

    # ---- gradients ----------------------------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, gate_gradients=_v1.train.Optimizer.GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False, grad_loss=None):
        """Gradients of `loss * scale`, divided by the scale (the same read of it)."""
        if callable(loss):
            raise TypeError(f"{type(self).__name__} builds graphs: pass the loss tensor, not a callable")
        kwargs = dict(var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
                      colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if self._loss_scale_manager is None:
            return self._opt.compute_gradients(loss, **kwargs)
        scale = self._loss_scale_manager.get_loss_scale()
        scaled_loss = loss * tf.cast(scale, loss.dtype)
        grads_and_vars = self._opt.compute_gradients(scaled_loss, **kwargs)
        return [(_unscale(grad, scale), var) for grad, var in grads_and_vars]

    def reduce_gradients_and_overflow(self, grads_and_vars, is_finite):
        """Extension point for data-parallel training: combine gradients and the overflow flag.

        Returns `(grads_and_vars, is_finite)`. In one process there is nothing to combine. A
        distributed subclass all-reduces the gradients and ANDs `is_finite` (a bool scalar, or None
        when overflow checking is off) over all ranks, so every rank skips the same steps.
        """
        if self._is_distributed:
            from ..distribute.optimizer import reduce_gradients_and_overflow  # TensorFlow's collectives

            return reduce_gradients_and_overflow(self, grads_and_vars, is_finite)
        return grads_and_vars, is_finite

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        self._record_in_graph()
        manager = self._loss_scale_manager
        if manager is None:
            grads_and_vars, _ = self.reduce_gradients_and_overflow(grads_and_vars, None)
            return self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)
        grads = [grad for grad, _ in grads_and_vars if grad is not None]
        if manager.get_enable_overflow_check():
            is_finite = _all_finite(grads)
        else:
            is_finite = tf.constant(True, name="overflow_check_off")
        grads_and_vars, is_finite = self.reduce_gradients_and_overflow(grads_and_vars, is_finite)

        def apply():
            with tf.control_dependencies([self._opt.apply_gradients(grads_and_vars, global_step=global_step,
                                                                    name=name)]):
                return tf.no_op()

        applied = _v1.cond(is_finite, apply, tf.no_op, name="apply_if_finite")
        with tf.control_dependencies([applied]):
            update = manager.update_loss_scale(is_finite)
        return tf.group(applied, update, name=name or "apply_loss_scaled_gradients")

    def _record_in_graph(self):
        pass

    # ---- slots belong to the inner optimizer --------------------------------------------------------
    def get_slot(self, var, name):
        return self._opt.get_slot(var, name)

    def get_slot_names(self):
        return self._opt.get_slot_names()

    def variables(self):
        return self._opt.variables()


class NPULossScaleOptimizer(_LossScaledOptimizer):
    """`opt` with loss scaling by `loss_scale_manager` (Fixed or ExponentialUpdate)."""

    def __init__(self, opt, loss_scale_manager, is_distributed=False):
        if loss_scale_manager is None:
            raise ValueError("NPULossScaleOptimizer: loss_scale_manager is required (a FixedLossScaleManager "
                             "or an ExponentialUpdateLossScaleManager)")
        super().__init__(opt, loss_scale_manager, is_distributed, None, "NPULossScaleOptimizer")


class NPUOptimizer(_LossScaledOptimizer):
    """`opt` with optional loss scaling (`is_loss_scale`) and the distributed options.

    `is_loss_scale=True` needs `loss_scale_manager` (ValueError otherwise). A manager given with
    `is_loss_scale=False` is not used (as in the Ascend adapter), with a UserWarning.
    """

    # As the adapter's: with is_distributed, NPUOptimizer averages the gradients over the ranks
    # itself (NPULossScaleOptimizer only agrees on overflow). Read by npurun.distribute.optimizer.
    averages_gradients_over_ranks = True

    def __init__(self, opt, loss_scale_manager=None, is_distributed=False, is_loss_scale=False,
                 is_tailing_optimization=False, name=None):
        for flag, value in (("is_loss_scale", is_loss_scale), ("is_tailing_optimization", is_tailing_optimization)):
            if not isinstance(value, bool):
                raise TypeError(f"NPUOptimizer: {flag} must be True or False, got {value!r}")
        if is_loss_scale and loss_scale_manager is None:
            raise ValueError("NPUOptimizer: is_loss_scale=True needs a loss_scale_manager "
                             "(a FixedLossScaleManager or an ExponentialUpdateLossScaleManager)")
        if loss_scale_manager is not None and not is_loss_scale:
            warnings.warn("NPUOptimizer: loss_scale_manager is given but is_loss_scale=False, so it is not "
                          "used; pass is_loss_scale=True to scale the loss", UserWarning, stacklevel=2)
        super().__init__(opt, loss_scale_manager if is_loss_scale else None, is_distributed, name, "NPUOptimizer")
        self._is_loss_scale = is_loss_scale
        self._is_tailing_optimization = is_tailing_optimization

    @property
    def is_loss_scale(self) -> bool:
        return self._is_loss_scale

    @property
    def is_tailing_optimization(self) -> bool:
        return self._is_tailing_optimization

    def _record_in_graph(self):
        with _v1.init_scope():
            # an int: a bool in a collection cannot be written to a MetaGraphDef (TensorFlow warns)
            _v1.get_default_graph().add_to_collection(TAILING_COLLECTION, int(self._is_tailing_optimization))


__all__ = ["NPULossScaleOptimizer", "NPUOptimizer", "check_tailing_optimization"]
