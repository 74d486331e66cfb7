"""The old home of npurun's compatibility layer, kept so the paths users and docs name keep working.

`npurun.compat.activate()` / `deactivate()` / `is_active()` / `active()` and `AdapterAPIError` are
`npurun.adapter`'s (the Ascend adapters' names and the activation); `python -m npurun.compat` runs
the script tools (`npurun.tools`). New code imports from `npurun.adapter`, `npurun.tf1`,
`npurun.tf_estimator` and `npurun.tools` directly.
"""
from ..adapter import AdapterAPIError, activate, active, deactivate, is_active  # re-exported: the documented path

__all__ = ["activate", "deactivate", "is_active", "active", "AdapterAPIError"]

# `from npurun.compat import layers as npu_layers` is what `npurun migrate` wrote before the layers moved
# to npurun.tf1: scripts migrated then keep working. Loaded on use (it imports tf-keras, hence TensorFlow).
_MOVED = {"layers": "npurun.tf1.layers"}


def __getattr__(name):
    if name in _MOVED:
        from importlib import import_module

        return import_module(_MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
