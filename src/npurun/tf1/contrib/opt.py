"""`tf.contrib.opt.LazyAdamOptimizer`: Adam that, for sparse gradients, updates only the rows they touch.

For dense gradients it is `tf.compat.v1.train.AdamOptimizer`. For sparse ones (embedding lookups),
TF 1's LazyAdam updated the moments and the variable only at the gradient's indices, so rows not in
the batch keep their moments and values; this does the same with scatter updates (duplicate
indices are summed first by the base optimizer).
"""
from __future__ import annotations


def _make_lazy_adam():
    import tensorflow as tf

    v1 = tf.compat.v1

    class LazyAdamOptimizer(v1.train.AdamOptimizer):
        def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking=False,
                     name="LazyAdam"):
            super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

        def _lazy_update(self, var, values, indices):
            beta1_power, beta2_power = self._get_beta_accumulators()
            dtype = var.dtype.base_dtype
            beta1_power, beta2_power = tf.cast(beta1_power, dtype), tf.cast(beta2_power, dtype)
            lr = tf.cast(self._lr_t, dtype) * tf.sqrt(1 - beta2_power) / (1 - beta1_power)
            beta1, beta2 = tf.cast(self._beta1_t, dtype), tf.cast(self._beta2_t, dtype)
            epsilon = tf.cast(self._epsilon_t, dtype)
            m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
            m_rows = beta1 * tf.gather(m, indices) + (1 - beta1) * values
            v_rows = beta2 * tf.gather(v, indices) + (1 - beta2) * tf.square(values)
            m_t = v1.scatter_update(m, indices, m_rows, use_locking=self._use_locking)
            v_t = v1.scatter_update(v, indices, v_rows, use_locking=self._use_locking)
            step = lr * m_rows / (tf.sqrt(v_rows) + epsilon)
            var_t = v1.scatter_sub(var, indices, step, use_locking=self._use_locking)
            return tf.group(var_t, m_t, v_t)

        def _apply_sparse(self, grad, var):
            return self._lazy_update(var, grad.values, grad.indices)

        def _resource_apply_sparse(self, grad, var, indices):
            return self._lazy_update(var, grad, indices)

    LazyAdamOptimizer.__module__ = "tensorflow.contrib.opt"
    return LazyAdamOptimizer


def __getattr__(name):
    if name == "LazyAdamOptimizer":
        value = _make_lazy_adam()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
