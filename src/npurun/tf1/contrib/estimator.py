"""`tf.contrib.estimator.clip_gradients_by_norm(optimizer, clip_norm)`: the optimizer, its gradients clipped
by their global norm.

TF 1.15's contrib.estimator wrapped the optimizer so that `compute_gradients` returns the gradients
scaled by `clip_norm / max(global_norm, clip_norm)` (`tf.clip_by_global_norm`), the rest delegated; 3
ModelZoo folders (RFN_ID0212 of the random sample among them) wrap their optimizer with it. Written
here: tf.estimator 2.x dropped contrib.estimator's extenders.
"""
from __future__ import annotations


def _make_clipping_optimizer():
    import tensorflow as tf

    v1 = tf.compat.v1

    class _ClipGradientsByNorm(v1.train.Optimizer):
        def __init__(self, optimizer, clip_norm, name=None):
            super().__init__(use_locking=False, name=name or f"ClipByNorm{optimizer.get_name()}")
            self._optimizer, self._clip_norm = optimizer, clip_norm

        def compute_gradients(self, *args, **kwargs):
            grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
            gradients, variables = zip(*grads_and_vars) if grads_and_vars else ((), ())
            clipped, _ = tf.clip_by_global_norm(list(gradients), self._clip_norm)
            return list(zip(clipped, variables))

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)

        def get_slot(self, *args, **kwargs):
            return self._optimizer.get_slot(*args, **kwargs)

        def get_slot_names(self, *args, **kwargs):
            return self._optimizer.get_slot_names(*args, **kwargs)

        def variables(self):
            return self._optimizer.variables()

    return _ClipGradientsByNorm


_CLASS = None


def clip_gradients_by_norm(optimizer, clip_norm):
    """`optimizer` with the gradients of `compute_gradients` (and so `minimize`) clipped to global norm `clip_norm`."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_clipping_optimizer()
    return _CLASS(optimizer, clip_norm)
