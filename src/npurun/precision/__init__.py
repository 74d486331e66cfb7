"""Precision: precision modes and op lists (the plan contributor in `modes`), loss scaling.

The Ascend adapter's loss-scale API is importable from here: `FixedLossScaleManager`,
`ExponentialUpdateLossScaleManager`, `NPULossScaleOptimizer`, `NPUOptimizer`.
"""
from .loss_scale import ExponentialUpdateLossScaleManager, FixedLossScaleManager, LossScaleLoggingHook
from .optimizer import NPULossScaleOptimizer, NPUOptimizer, check_tailing_optimization

__all__ = ["FixedLossScaleManager", "ExponentialUpdateLossScaleManager", "NPULossScaleOptimizer", "NPUOptimizer",
           "LossScaleLoggingHook", "check_tailing_optimization"]
