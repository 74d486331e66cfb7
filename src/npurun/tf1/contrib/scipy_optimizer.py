"""`tf.contrib.opt.ScipyOptimizerInterface`: minimise a graph's loss with `scipy.optimize.minimize`.

TF 1.15's contrib had it (kernetNet's L-BFGS-B training, 2 ModelZoo folders) and TensorFlow 2 has no
counterpart, nor does a maintained package for TensorFlow 1 graphs, so it is written here. The
variables are packed into one float64 vector; each function evaluation assigns that vector to the
variables and runs the loss and its gradient (and the constraints' values and gradients) in the
script's session, with its feeds. `minimize()` leaves the optimum in the variables, as TF 1.15's did.
SciPy is needed only when this is used (as in TF 1.15).
"""
from __future__ import annotations

import logging

_LOG = logging.getLogger("npurun")


def _make_interfaces():
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1

    def packed(tensors, variables):
        """One flat vector of `tensors` (gradients, None -> zeros) in `variables`' order and shapes."""
        parts = [tf.reshape(tf.zeros_like(v) if t is None else tf.convert_to_tensor(t), [-1])
                 for t, v in zip(tensors, variables)]
        return tf.concat(parts, axis=0) if parts else tf.zeros([0])

    class ExternalOptimizerInterface:
        """Base of optimisers run outside TensorFlow on the packed variables (TF 1.15's contrib.opt)."""

        def __init__(self, loss, var_list=None, equalities=None, inequalities=None, var_to_bounds=None,
                     **optimizer_kwargs):
            self._loss = loss
            self._equalities = list(equalities or [])
            self._inequalities = list(inequalities or [])
            self._vars = list(var_list) if var_list is not None else list(v1.trainable_variables())
            if not self._vars:
                raise ValueError("No variables to optimize.")
            shapes = [v.shape for v in self._vars]
            if any(not s.is_fully_defined() for s in shapes):
                raise ValueError("ScipyOptimizerInterface needs variables of fully defined shapes; got "
                                 f"{[str(s) for s in shapes]}")
            self._shapes = [tuple(s.as_list()) for s in shapes]
            self._sizes = [int(np.prod(s)) for s in self._shapes]
            self._optimizer_kwargs = optimizer_kwargs
            self._loss_grad = packed(tf.gradients(loss, self._vars), self._vars)
            self._constraint_grads = [packed(tf.gradients(c, self._vars), self._vars)
                                      for c in self._equalities + self._inequalities]
            self._placeholders = [v1.placeholder(v.dtype.base_dtype, shape) for v, shape in zip(self._vars, self._shapes)]
            self._assign = tf.group(*[v1.assign(v, p) for v, p in zip(self._vars, self._placeholders)])
            self._bounds = self._packed_bounds(var_to_bounds or {})

        def _packed_bounds(self, var_to_bounds):
            if not var_to_bounds:
                return None
            lows, highs = [], []
            for var, shape in zip(self._vars, self._shapes):
                low, high = var_to_bounds.get(var, (-np.inf, np.inf))
                lows.append(np.broadcast_to(np.asarray(-np.inf if low is None else low, np.float64), shape).ravel())
                highs.append(np.broadcast_to(np.asarray(np.inf if high is None else high, np.float64), shape).ravel())
            low, high = np.concatenate(lows), np.concatenate(highs)
            return [(None if np.isneginf(a) else float(a), None if np.isposinf(b) else float(b))
                    for a, b in zip(low, high)]

        def _unpack(self, x):
            out, start = {}, 0
            for placeholder, shape, size in zip(self._placeholders, self._shapes, self._sizes):
                out[placeholder] = np.reshape(x[start:start + size], shape)
                start += size
            return out

        def minimize(self, session=None, feed_dict=None, fetches=None, step_callback=None, loss_callback=None,
                     **run_kwargs):
            session = session or v1.get_default_session()
            if session is None:
                raise ValueError("ScipyOptimizerInterface.minimize needs a session (pass session=, or run it "
                                 "under `with sess.as_default():`)")
            feed_dict = dict(feed_dict or {})
            fetches = list(fetches or [])

            def evaluate(x, tensors):
                session.run(self._assign, feed_dict=self._unpack(x), **run_kwargs)
                return session.run(tensors, feed_dict=feed_dict, **run_kwargs)

            def loss_and_grad(x):
                loss, grad, *fetched = evaluate(x, [self._loss, self._loss_grad] + fetches)
                if loss_callback is not None:
                    loss_callback(*fetched)
                return np.float64(loss), np.asarray(grad, np.float64)

            constraints = []
            for index, constraint in enumerate(self._equalities + self._inequalities):
                kind = "eq" if index < len(self._equalities) else "ineq"
                constraints.append({
                    "type": kind,
                    "fun": lambda x, c=constraint: np.atleast_1d(np.asarray(evaluate(x, c), np.float64)),
                    "jac": lambda x, g=self._constraint_grads[index]: np.atleast_2d(np.asarray(evaluate(x, g),
                                                                                                np.float64))})
            initial = np.concatenate([np.asarray(value, np.float64).ravel()
                                      for value in session.run(self._vars, **run_kwargs)])
            x = self._minimize(loss_and_grad, initial, constraints, step_callback)
            session.run(self._assign, feed_dict=self._unpack(x), **run_kwargs)

        def _minimize(self, loss_and_grad, initial, constraints, step_callback):
            raise NotImplementedError

    class ScipyOptimizerInterface(ExternalOptimizerInterface):
        """`scipy.optimize.minimize` (default method L-BFGS-B) over the graph's loss."""

        _DEFAULT_METHOD = "L-BFGS-B"

        def _minimize(self, loss_and_grad, initial, constraints, step_callback):
            try:
                from scipy.optimize import minimize
            except ImportError as error:  # TF 1.15 needed SciPy here too
                raise ImportError("tf.contrib.opt.ScipyOptimizerInterface needs SciPy: pip install scipy") from error
            kwargs = dict(self._optimizer_kwargs)
            method = kwargs.pop("method", self._DEFAULT_METHOD)
            options = dict(kwargs.pop("options", None) or {})
            if method.upper() == "L-BFGS-B":  # SciPy 1.15 deprecated these (removed in 1.18); the log line says the result
                options.pop("disp", None)
                options.pop("iprint", None)
            result = minimize(loss_and_grad, initial, method=method, jac=True, bounds=self._bounds,
                              constraints=constraints or (), callback=step_callback, options=options, **kwargs)
            _LOG.info("ScipyOptimizerInterface: %s after %s iterations, %s evaluations: loss %.6g",
                      result.message, getattr(result, "nit", "?"), result.nfev, result.fun)
            return result.x

    for cls in (ExternalOptimizerInterface, ScipyOptimizerInterface):
        cls.__module__ = "tensorflow.contrib.opt"
    return {"ExternalOptimizerInterface": ExternalOptimizerInterface,
            "ScipyOptimizerInterface": ScipyOptimizerInterface}


def __getattr__(name):
    if name in ("ExternalOptimizerInterface", "ScipyOptimizerInterface"):
        made = _make_interfaces()
        globals().update(made)
        return made[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
