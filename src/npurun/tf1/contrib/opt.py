"""`tf.contrib.opt` optimizers of TensorFlow 1.15 that ModelZoo scripts use, as `tf.compat.v1.train.Optimizer`s.

- `LazyAdamOptimizer`: Adam that, for sparse gradients (embedding lookups), updates the moments and the
  variable only at the gradient's indices, so rows not in the batch keep their moments and values
  (duplicate indices are summed first by the base optimizer). Dense gradients: plain Adam.
- `NadamOptimizer`: Adam with Nesterov momentum, `var -= lr_t * (beta1 * m_t + (1 - beta1) * g) /
  (sqrt(v_t) + epsilon)` with `lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)`: dense gradients through the
  ApplyAdam kernels with `use_nesterov=True`; sparse ones decay the whole `m` and `v` and move the variable
  at the gradient's rows (TF 1.15's scatter form). Its slots are Adam's (`m`, `v`; default name "Adam").
- `AdamWOptimizer(weight_decay, ...)` / `MomentumWOptimizer(weight_decay, ...)`: decoupled weight decay
  (Loshchilov & Hutter): before the inner Adam / Momentum update, `var -= weight_decay * var` (for a
  sparse gradient, on its rows only). The decay is not scaled by the learning rate. `minimize` and
  `apply_gradients` take `decay_var_list`: only those variables decay (none given: all that are updated).
"""
from __future__ import annotations

_CLASSES = ("LazyAdamOptimizer", "NadamOptimizer", "AdamWOptimizer", "MomentumWOptimizer")


def _make_classes():
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

    class NadamOptimizer(v1.train.AdamOptimizer):
        """Adam with Nesterov momentum (TF 1.15's constructor: AdamOptimizer's, name "Adam")."""

        def _adam_arguments(self, var):
            dtype = var.dtype.base_dtype
            beta1_power, beta2_power = self._get_beta_accumulators()
            return (tf.cast(beta1_power, dtype), tf.cast(beta2_power, dtype), tf.cast(self._lr_t, dtype),
                    tf.cast(self._beta1_t, dtype), tf.cast(self._beta2_t, dtype), tf.cast(self._epsilon_t, dtype))

        def _adam_kwargs(self, var, grad):
            names = ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")
            return dict(zip(names, self._adam_arguments(var)), grad=grad, use_locking=self._use_locking,
                        use_nesterov=True)

        def _apply_dense(self, grad, var):
            return tf.raw_ops.ApplyAdam(var=var, m=self.get_slot(var, "m"), v=self.get_slot(var, "v"),
                                        **self._adam_kwargs(var, grad))

        def _resource_apply_dense(self, grad, var):
            return tf.raw_ops.ResourceApplyAdam(var=var.handle, m=self.get_slot(var, "m").handle,
                                                v=self.get_slot(var, "v").handle, **self._adam_kwargs(var, grad))

        def _nesterov_sparse(self, var, values, indices):
            beta1_power, beta2_power, lr, beta1, beta2, epsilon = self._adam_arguments(var)
            lr = lr * tf.sqrt(1 - beta2_power) / (1 - beta1_power)
            m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
            locking = self._use_locking
            m_scaled = (1 - beta1) * values
            # (each read after the update before it: a resource variable's scatter result is not read in order)
            with tf.control_dependencies([v1.assign(m, m * beta1, use_locking=locking).op]):
                m_t = v1.scatter_add(m, indices, m_scaled, use_locking=locking).op
            with tf.control_dependencies([v1.assign(v, v * beta2, use_locking=locking).op]):
                v_t = v1.scatter_add(v, indices, (1 - beta2) * tf.square(values), use_locking=locking).op
            with tf.control_dependencies([m_t, v_t]):
                m_bar = m_scaled + beta1 * tf.gather(m, indices)  # Nesterov: one more momentum step ahead
                step = lr * m_bar / (tf.sqrt(tf.gather(v, indices)) + epsilon)
            return tf.group(v1.scatter_sub(var, indices, step, use_locking=locking).op, m_t, v_t)

        def _apply_sparse(self, grad, var):
            return self._nesterov_sparse(var, grad.values, grad.indices)

        def _resource_apply_sparse(self, grad, var, indices):
            return self._nesterov_sparse(var, grad, indices)

    def with_decoupled_weight_decay(base):
        class DecoupledWeightDecay(base):
            def __init__(self, weight_decay, *args, **kwargs):
                self._weight_decay = weight_decay
                self._weight_decay_t = None
                self._decay_vars = None  # None: every variable updated decays
                super().__init__(*args, **kwargs)

            def minimize(self, loss, global_step=None, var_list=None, gate_gradients=v1.train.Optimizer.GATE_OP,
                         aggregation_method=None, colocate_gradients_with_ops=False, name=None, grad_loss=None,
                         decay_var_list=None):
                grads_and_vars = self.compute_gradients(
                    loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
                    colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
                if not any(grad is not None for grad, _ in grads_and_vars):
                    raise ValueError(f"No gradients provided for any variable of {[v.name for _, v in grads_and_vars]} "
                                     f"from the loss {loss}")
                return self.apply_gradients(grads_and_vars, global_step=global_step, name=name,
                                            decay_var_list=decay_var_list)

            def apply_gradients(self, grads_and_vars, global_step=None, name=None, decay_var_list=None):
                self._set_decay_vars(decay_var_list)
                return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

            def _set_decay_vars(self, decay_var_list):
                self._decay_vars = {id(var) for var in decay_var_list} if decay_var_list else None

            def _prepare(self):
                weight_decay = self._weight_decay() if callable(self._weight_decay) else self._weight_decay
                self._weight_decay_t = tf.convert_to_tensor(weight_decay, name="weight_decay")
                super()._prepare()

            def _decays(self, var):
                return self._decay_vars is None or id(var) in self._decay_vars

            def _decay(self, var):
                if not self._decays(var):
                    return tf.no_op()
                decay = tf.cast(self._weight_decay_t, var.dtype.base_dtype)
                return v1.assign_sub(var, decay * var, use_locking=self._use_locking).op

            def _decay_rows(self, var, indices):
                if not self._decays(var):
                    return tf.no_op()
                decay = tf.cast(self._weight_decay_t, var.dtype.base_dtype)
                return v1.scatter_add(var, indices, -decay * tf.gather(var, indices),
                                      use_locking=self._use_locking).op  # (the op: reads after it see the decay)

            def _apply_dense(self, grad, var):
                with tf.control_dependencies([self._decay(var)]):
                    return super()._apply_dense(grad, var)

            def _resource_apply_dense(self, grad, var):
                with tf.control_dependencies([self._decay(var)]):
                    return super()._resource_apply_dense(grad, var)

            def _apply_sparse(self, grad, var):
                with tf.control_dependencies([self._decay_rows(var, grad.indices)]):
                    return super()._apply_sparse(grad, var)

            def _resource_apply_sparse(self, grad, var, indices):
                with tf.control_dependencies([self._decay_rows(var, indices)]):
                    return super()._resource_apply_sparse(grad, var, indices)

        return DecoupledWeightDecay

    class AdamWOptimizer(with_decoupled_weight_decay(v1.train.AdamOptimizer)):
        def __init__(self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                     use_locking=False, name="AdamW"):
            super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon,
                             use_locking=use_locking, name=name)

    class MomentumWOptimizer(with_decoupled_weight_decay(v1.train.MomentumOptimizer)):
        def __init__(self, weight_decay, learning_rate, momentum, use_locking=False, name="MomentumW",
                     use_nesterov=False):
            super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum, use_locking=use_locking,
                             name=name, use_nesterov=use_nesterov)

    classes = {"LazyAdamOptimizer": LazyAdamOptimizer, "NadamOptimizer": NadamOptimizer,
               "AdamWOptimizer": AdamWOptimizer, "MomentumWOptimizer": MomentumWOptimizer}
    for cls in classes.values():
        cls.__module__ = "tensorflow.contrib.opt"
    return classes


def __getattr__(name):
    if name in _CLASSES:
        globals().update(_make_classes())
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
