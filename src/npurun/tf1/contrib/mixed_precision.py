"""`tf.contrib.mixed_precision` of TensorFlow 1.15: `LossScaleOptimizer(opt, loss_scale_manager)` and its two
managers, which the Ascend adapter's `NPULossScaleOptimizer` and managers were derived from.

The rules are the same: the loss is multiplied by the manager's scale and each gradient divided by it; a step
whose gradients hold an inf or NaN changes no variable (the inner `apply_gradients`, `global_step` included,
runs under a `tf.cond`); the manager then updates its scale. So these are `npurun.precision`'s classes under
their contrib names (5 ModelZoo folders build `ExponentialUpdateLossScaleManager` from contrib).
"""
from __future__ import annotations

from ...precision.loss_scale import ExponentialUpdateLossScaleManager, FixedLossScaleManager, LossScaleManager
from ...precision.optimizer import NPULossScaleOptimizer


class LossScaleOptimizer(NPULossScaleOptimizer):
    """TF 1.15's `tf.contrib.mixed_precision.LossScaleOptimizer(opt, loss_scale_manager)` (one device)."""

    def __init__(self, opt, loss_scale_manager):
        super().__init__(opt, loss_scale_manager, is_distributed=False)


__all__ = ["LossScaleOptimizer", "LossScaleManager", "FixedLossScaleManager", "ExponentialUpdateLossScaleManager"]
