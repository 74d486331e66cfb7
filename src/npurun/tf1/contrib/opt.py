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
- `MovingAverageOptimizer(opt, average_decay=0.9999, num_updates=None, sequential_update=True)`: `opt`'s
  step, then (after it, unless `sequential_update=False`) a `tf.train.ExponentialMovingAverage` of the
  variables it trained (`<var>/ExponentialMovingAverage`, the names `variables_to_restore()` reads).
  `swapping_saver()` saves each average under its variable's name and the variable under the average's,
  so the checkpoint's model is the averaged one (and restoring it swaps them back).
"""
from __future__ import annotations

_CLASSES = ("LazyAdamOptimizer", "NadamOptimizer", "AdamWOptimizer", "MomentumWOptimizer", "MovingAverageOptimizer")


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

    class MovingAverageOptimizer(v1.train.Optimizer):
        def __init__(self, opt, average_decay=0.9999, num_updates=None, sequential_update=True):
            if not isinstance(opt, v1.train.Optimizer):
                raise TypeError(f"tf.contrib.opt.MovingAverageOptimizer: opt must be a tf.compat.v1.train.Optimizer, "
                                f"got {type(opt).__name__}")
            super().__init__(use_locking=False, name=f"MovingAverage{opt.get_name()}")
            self._optimizer = opt
            self._ema = v1.train.ExponentialMovingAverage(average_decay, num_updates=num_updates)
            self._sequential_update = sequential_update
            self._swapped_names = None  # variable <-> average op names, once apply_gradients has run

        def compute_gradients(self, *args, **kwargs):
            return self._optimizer.compute_gradients(*args, **kwargs)

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            grads_and_vars = list(grads_and_vars)
            train_op = self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)
            trained = [var for grad, var in grads_and_vars if grad is not None]
            if self._sequential_update:
                with tf.control_dependencies([train_op]):
                    average_op = self._ema.apply(trained)
            else:
                average_op = self._ema.apply(trained)
            self._swapped_names = {}
            for var in trained:
                average = self._ema.average(var).op.name
                self._swapped_names.update({var.op.name: average, average: var.op.name})
            return tf.group(train_op, average_op, name="train_with_avg")

        def get_slot(self, var, name):
            return self._optimizer.get_slot(var, name)

        def get_slot_names(self):
            return self._optimizer.get_slot_names()

        def variables(self):
            return self._optimizer.variables()

        def swapping_saver(self, var_list=None, name="swapping_saver", **kwargs):
            """A tf.train.Saver of `var_list` (default: the global variables) that writes each trained
            variable's moving average under the variable's name, and the variable under the average's."""
            if self._swapped_names is None:
                raise RuntimeError("tf.contrib.opt.MovingAverageOptimizer.swapping_saver: call minimize or "
                                   "apply_gradients first (the averages are made there)")
            if var_list is None:
                var_list = v1.global_variables()
            if not isinstance(var_list, dict):
                named = {}
                for var in var_list:  # a saver's names: a partitioned variable's slices are saved as one
                    info = getattr(var, "_save_slice_info", None)
                    if info is not None:
                        named.setdefault(info.full_name, []).append(var)
                    else:
                        named[var.op.name] = var
                var_list = named
            by_name = {}
            for key, value in var_list.items():
                by_name.update({v.op.name: v for v in value} if isinstance(value, (list, tuple)) else {key: value})

            def swapped(op_name, var):
                other = self._swapped_names.get(op_name)
                if other is None:
                    return var
                if other not in by_name:
                    raise ValueError(f"tf.contrib.opt.MovingAverageOptimizer.swapping_saver: {other!r}, the swap of "
                                     f"{op_name!r}, is not in var_list; save both or neither")
                return by_name[other]

            swapped_list = {key: [swapped(v.op.name, v) for v in value] if isinstance(value, (list, tuple))
                            else swapped(key, value) for key, value in var_list.items()}
            return v1.train.Saver(swapped_list, name=name, **kwargs)

    classes = {"LazyAdamOptimizer": LazyAdamOptimizer, "NadamOptimizer": NadamOptimizer,
               "AdamWOptimizer": AdamWOptimizer, "MomentumWOptimizer": MomentumWOptimizer,
               "MovingAverageOptimizer": MovingAverageOptimizer}
    for cls in classes.values():
        cls.__module__ = "tensorflow.contrib.opt"
    return classes


def __getattr__(name):
    if name in _CLASSES:
        globals().update(_make_classes())
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
