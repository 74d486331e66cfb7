"""`InMemoryEvaluatorHook`: evaluate during training, without waiting for a checkpoint.

As tf.estimator's: evaluates once when the training session starts (the model before
training), then every `every_n_iter` training runs, and once when training ends, with the
training variables' current values; results go to `eval_dir(name)` like `evaluate()`'s. Here
the values travel through a private checkpoint in a temporary directory (model_dir's
checkpoints and their retention are untouched), read by an ordinary `estimator.evaluate`.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import tensorflow as tf

from .spec import ModeKeys, check_hooks

_v1 = tf.compat.v1


class InMemoryEvaluatorHook(_v1.train.SessionRunHook):
    """Runs `estimator.evaluate(input_fn, steps, hooks, name)` on the model being trained (see the module doc)."""

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None, every_n_iter=100):
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}: InMemoryEvaluatorHook needs every_n_iter > 0")
        config = estimator.config
        if config.num_ps_replicas > 0 or config.num_worker_replicas > 1:
            raise ValueError("InMemoryEvaluator supports only single machine (aka Local) setting; this config "
                             "describes a cluster (TF_CONFIG)")
        self._estimator = estimator
        self._input_fn = input_fn
        self._steps = steps
        self._hooks = check_hooks(hooks, "InMemoryEvaluatorHook hooks")
        self._name = name
        self._every_n_iter = every_n_iter
        self.results = []  # every evaluation's result, in order

    def begin(self):
        self._check_evaluation_scaffold()
        self._iterations = 0
        self._saver = _v1.train.Saver(sharded=False, max_to_keep=1, allow_empty=True)
        self._directory = tempfile.mkdtemp(prefix="npurun_in_memory_eval_")

    def after_create_session(self, session, coord):
        # Only global variables travel to the evaluation (tf.estimator's rule; an evaluation whose
        # state cannot be carried would evaluate something else than the model being trained).
        if _v1.get_collection(_v1.GraphKeys.SAVEABLE_OBJECTS):
            raise ValueError("InMemoryEvaluator does not support saveables other than global variables "
                             "(the training graph has SAVEABLE_OBJECTS)")
        self._evaluate(session)

    def _check_evaluation_scaffold(self):
        """The evaluation model's Scaffold may not bring its own saver or init_fn (tf.estimator's rule: the
        training values, not a restore or an initialisation of its own, are what is evaluated)."""
        from .building import call_model_fn
        from .inputs import call_with_accepted, make_input

        estimator = self._estimator
        with tf.Graph().as_default():
            _v1.train.create_global_step()
            available = {"mode": ModeKeys.EVAL, "params": estimator.params, "config": estimator.config}
            given = make_input(call_with_accepted(self._input_fn, available, "input_fn"))
            spec = call_model_fn(estimator.model_fn, given.features, given.labels, ModeKeys.EVAL, estimator.params,
                                 estimator.config)
        scaffold = spec.scaffold
        if scaffold is not None and scaffold.saver is not None:
            raise ValueError("InMemoryEvaluator does not support custom saver (the evaluation model's Scaffold "
                             "has one)")
        if scaffold is not None and scaffold.init_fn is not None:
            raise ValueError("InMemoryEvaluator does not support custom init_fn (the evaluation model's Scaffold "
                             "has one)")

    def after_run(self, run_context, run_values):
        self._iterations += 1
        if self._iterations % self._every_n_iter == 0:
            self._evaluate(run_context.session)

    def end(self, session):
        try:
            self._evaluate(session)
        finally:
            shutil.rmtree(self._directory, ignore_errors=True)

    def _evaluate(self, session):
        prefix = self._saver.save(session, os.path.join(self._directory, "model.ckpt"), write_meta_graph=False,
                                  write_state=False)
        from .estimator import _in_memory

        _in_memory.active = True
        try:
            self.results.append(self._estimator.evaluate(self._input_fn, steps=self._steps, hooks=self._hooks,
                                                         checkpoint_path=prefix, name=self._name))
        finally:
            _in_memory.active = False
