"""Run Ascend adapter scripts unmodified: `npurun run script.py`, or `npurun.compat.activate()`.

While active:

- `import npu_bridge...` / `import hccl...` resolve to npurun through the coverage table
  (`npurun.compat.aliases`, published as docs/compat.md): each name is npurun's implementation, or
  raises `AdapterAPIError` naming it and why it cannot work here;
- TensorFlow 2.21 gets what such scripts expect of it: `tf.estimator` (`tf.compat.v1.estimator`)
  backed by NPUEstimator, `tf.compat.v1.layers` if Keras 3 removed it, and `tf.compat.v1.Session`
  reading an `NpuOptimizer` entry of its ConfigProto as NPURunConfig options.

`deactivate()` undoes all of it. Activating does not import TensorFlow: the TensorFlow part is
applied when the script imports it. `npurun migrate` rewrites a script to npurun's own API instead,
and `npurun check` reports what a script uses and how it behaves here.
"""
from __future__ import annotations

import contextlib
import sys
import threading

from .aliases import AdapterAPIError

_lock = threading.Lock()
_finder = None
_tf1_world = None


def activate(graph_mode: bool = False) -> None:
    """Install the import hook and the TensorFlow adjustments (idempotent).

    Scripts' `import tensorflow` then gives TensorFlow 1's API (`npurun.compat.tf1`); with
    `graph_mode` (as `npurun run` does) TensorFlow 1's graph mode is switched on when a script first
    imports TensorFlow (it stays on: TensorFlow cannot return to eager mode).
    """
    global _finder, _tf1_world
    with _lock:
        if _finder is not None:
            return
        from . import tf_estimator
        from .finder import CompatFinder
        from .tf1 import TF1World

        _tf1_world = TF1World(graph_mode)

        def on_tensorflow(module):
            from . import layers  # imports tf-keras, which imports TensorFlow: only once it is imported

            layers.install_alias()
            tf_estimator.attach(module)
            _tf1_world.attach(sys.modules["tensorflow"])

        _finder = CompatFinder(watch={"tensorflow": on_tensorflow, "tensorflow.compat.v1": tf_estimator.attach})
        _tf1_world.install()
        _finder.install()


def deactivate() -> None:
    """Remove the import hook, the adapter modules it made and the TensorFlow adjustments."""
    global _finder, _tf1_world
    with _lock:
        if _finder is None:
            return
        from . import tf_estimator

        _finder.uninstall()
        _tf1_world.uninstall()
        tf_estimator.detach()
        _finder = None
        _tf1_world = None


def is_active() -> bool:
    return _finder is not None


@contextlib.contextmanager
def active(graph_mode: bool = False):
    """`with npurun.compat.active(): ...` activates for the block (if it was not already)."""
    was_active = is_active()
    activate(graph_mode)
    try:
        yield
    finally:
        if not was_active:
            deactivate()


__all__ = ["activate", "deactivate", "is_active", "active", "AdapterAPIError"]
