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

    from ...distribute.optimizer import DelegatingOptimizer

    class _ClipGradientsByNorm(DelegatingOptimizer):
        def __init__(self, optimizer, clip_norm, name=None):
            super().__init__(optimizer, name or f"ClipByNorm{optimizer.get_name()}")
            self._clip_norm = clip_norm

        def compute_gradients(self, *args, **kwargs):
            grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
            gradients, variables = zip(*grads_and_vars) if grads_and_vars else ((), ())
            clipped, _ = tf.clip_by_global_norm(list(gradients), self._clip_norm)
            return list(zip(clipped, variables))

    return _ClipGradientsByNorm


_CLASS = None


def clip_gradients_by_norm(optimizer, clip_norm):
    """`optimizer` with the gradients of `compute_gradients` (and so `minimize`) clipped to global norm `clip_norm`."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_clipping_optimizer()
    return _CLASS(optimizer, clip_norm)
