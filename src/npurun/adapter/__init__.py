"""The Ascend adapters' names, for scripts that run unmodified: `npurun run script.py`, or `activate()`.

While active:

- `import npu_bridge...` / `import hccl...` resolve to npurun through the coverage table
  (`tables`, published as docs/compat.md): each name is npurun's implementation (`shims`,
  `npu_ops`, `npu_dynamic_rnn`, `session`, or the rooms below), or raises `AdapterAPIError` naming
  it and why it cannot work here; `finder` is the import hook that builds those modules;
- TensorFlow 2.21 gets what such scripts expect of it (`tensorflow`): `tf.estimator` backed by
  NPUEstimator (`npurun.tf_estimator`), TensorFlow 1's world (`npurun.tf1`: `tf.compat.v1.layers`,
  `tf.contrib`, the TF 1 API), and `tf.compat.v1.Session` reading an `NpuOptimizer` entry of its
  ConfigProto as NPURunConfig options.

`deactivate()` undoes all of it. Activating does not import TensorFlow: the TensorFlow part is
applied when the script imports it. `npurun migrate` rewrites a script to npurun's own API instead,
and `npurun check` reports what a script uses and how it behaves here (`npurun.tools`).

Imports: every room below (`tf_estimator`, `tf1`, `estimator`, ...), never `npurun.tools` or the CLI.
"""
from __future__ import annotations

import contextlib
import sys
import threading

from ..names.coverage import AdapterAPIError

_lock = threading.Lock()
_finder = None
_tf1_world = None


def activate(graph_mode: bool = False, tf1: bool = True, keras2: bool = False) -> None:
    """Install the import hook and the TensorFlow adjustments (idempotent).

    With `tf1` (the default), scripts' `import tensorflow` gives TensorFlow 1's API
    (`npurun.tf1.world`); without it they keep TensorFlow 2's (with `tf.estimator`); with
    `graph_mode` (as `npurun run` does) TensorFlow 1's graph mode is switched on when a script first
    imports TensorFlow (it stays on: TensorFlow cannot return to eager mode). With `keras2` (TensorFlow 2
    scripts of the adapter's `npu_device`, written for TF 2.x's Keras 2) a script's standalone `import keras`
    gives tf-keras, as TensorFlow 1 scripts get it.
    """
    global _finder, _tf1_world
    with _lock:
        if _finder is not None:
            return
        from . import tensorflow as tf_adjustments
        from ..tf1.world import TF1World
        from .finder import CompatFinder

        _tf1_world = TF1World(graph_mode and tf1, scripts_get_tf1=tf1, scripts_get_keras2=keras2)

        def on_tensorflow(module):
            from ..tf1 import layers  # imports tf-keras, which imports TensorFlow: only once it is imported

            layers.install_alias()
            tf_adjustments.attach(module)
            _tf1_world.attach(sys.modules["tensorflow"])

        _finder = CompatFinder(watch={"tensorflow": on_tensorflow, "tensorflow.compat.v1": tf_adjustments.attach})
        _tf1_world.install()
        _finder.install()


def deactivate() -> None:
    """Remove the import hook, the adapter modules it made and the TensorFlow adjustments."""
    global _finder, _tf1_world
    with _lock:
        if _finder is None:
            return
        from . import tensorflow as tf_adjustments

        _finder.uninstall()
        _tf1_world.uninstall()
        tf_adjustments.detach()
        _finder = None
        _tf1_world = None


def is_active() -> bool:
    return _finder is not None


@contextlib.contextmanager
def active(graph_mode: bool = False, tf1: bool = True, keras2: bool = False):
    """`with npurun.compat.active(): ...` activates for the block (if it was not already)."""
    was_active = is_active()
    activate(graph_mode, tf1, keras2)
    try:
        yield
    finally:
        if not was_active:
            deactivate()


__all__ = ["activate", "deactivate", "is_active", "active", "AdapterAPIError"]
