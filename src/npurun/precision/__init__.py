"""Precision: precision modes and op lists (the plan contributor in `modes`), loss scaling, and the
per-machine policy for low-precision modes (`policy`, TensorFlow-free).

The Ascend adapter's loss-scale API is importable from here: `FixedLossScaleManager`,
`ExponentialUpdateLossScaleManager`, `NPULossScaleOptimizer`, `NPUOptimizer`. They load on first
use, so `npurun.precision.policy` (used by `npurun explain`) imports no TensorFlow.

Imports: `npurun.config`, `npurun.debug`, `npurun.distribute` (a distributed NPUOptimizer's
all-reduce); never `runtime` or `estimator`.
"""
import importlib

_LAZY = {
    "FixedLossScaleManager": "loss_scale",
    "ExponentialUpdateLossScaleManager": "loss_scale",
    "LossScaleLoggingHook": "loss_scale",
    "NPULossScaleOptimizer": "optimizer",
    "NPUOptimizer": "optimizer",
    "check_tailing_optimization": "optimizer",
}

__all__ = ["FixedLossScaleManager", "ExponentialUpdateLossScaleManager", "NPULossScaleOptimizer", "NPUOptimizer",
           "LossScaleLoggingHook", "check_tailing_optimization"]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
