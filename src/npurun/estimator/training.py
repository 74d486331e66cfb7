"""train_and_evaluate: train, evaluating after checkpoints, as tf.estimator did locally; or, in an evaluator
task, evaluate the checkpoints other tasks write.

A SIGTERM / SIGINT (see preemption.py) during train_and_evaluate ends it quickly: no evaluation or
export starts after the signal (not even for the checkpoint the signal saves), and an evaluation
in progress is abandoned at its next batch (nothing written for it). A scheduler's grace period
is seconds; an evaluation pass may take minutes. The resumed job evaluates at its next checkpoint.
"""
from __future__ import annotations

import logging
import time

import tensorflow as tf

from .. import preemption, safe_files
from . import checkpoints
from .spec import EvalSpec, TrainSpec

logger = logging.getLogger("npurun")


class _EvaluationAbandoned(Exception):
    """A SIGTERM / SIGINT arrived during an evaluation inside train_and_evaluate."""


class _AbandonOnSignal(tf.compat.v1.train.SessionRunHook):
    """Ends an evaluation at its next batch once training was asked to stop by a signal."""

    def __init__(self, watch):
        self._watch = watch

    def after_run(self, run_context, run_values):
        if self._watch.requested:
            raise _EvaluationAbandoned()


class _EvaluateAfterSave(tf.compat.v1.train.CheckpointSaverListener):
    """Evaluates (and runs the exporters) after a checkpoint when `throttle_secs` passed since the last."""

    def __init__(self, estimator, eval_spec: EvalSpec, max_steps=None):
        self._estimator = estimator
        self._spec = eval_spec
        self._max_steps = max_steps
        self._last_time = None
        self.last_step = None
        self.last_result = None
        self.export_results = []

    def begin(self):
        self._first_save = True

    def after_save(self, session, global_step_value):
        if getattr(self, "_first_save", False):  # the checkpoint of the untrained start: nothing to evaluate
            self._first_save = False
            return False
        if preemption.current().requested:
            return False  # stopping for a signal: the checkpoint is saved, exit within the grace period
        now = time.monotonic()
        if self._last_time is not None and now - self._last_time < self._spec.throttle_secs:
            return False
        self._last_time = now
        # As tf.estimator: the evaluation at max_steps is the final one (FinalExporter exports there).
        self.evaluate(global_step_value, final=self._max_steps is not None and global_step_value >= self._max_steps)
        return False

    def evaluate(self, step, final, path=None):
        path = path or checkpoints.latest_checkpoint(self._estimator.model_dir)
        watch = preemption.current()
        hooks = list(self._spec.hooks or ()) + ([_AbandonOnSignal(watch)] if watch.installed else [])
        try:
            result = self._estimator.evaluate(self._spec.input_fn, steps=self._spec.steps, hooks=hooks,
                                              name=self._spec.name, checkpoint_path=path)
        except _EvaluationAbandoned:
            logger.info("%s: the evaluation of %s was abandoned", watch.name(), path)
            return
        if watch.requested:
            return  # the signal came with the evaluation's last batch: no export either
        self.last_result = result
        self.last_step = step
        # As tf.estimator: train_and_evaluate returns the last evaluation's export results, one per exporter.
        # `export/<exporter name>` is npurun's name inside model_dir: each folder is created here,
        # refusing a planted link (an exporter's clean-up deletes old exports under it).
        self.export_results = [
            exporter.export(self._estimator,
                            safe_files.make_dirs_under(self._estimator.model_dir, f"export/{exporter.name}",
                                                       "export folder"), path, self.last_result, final)
            for exporter in self._spec.exporters]


def train_and_evaluate(estimator, train_spec: TrainSpec, eval_spec: EvalSpec):
    """Train to `train_spec.max_steps`, evaluating after new checkpoints and at the end.

    Rules (the local mode of tf.estimator.train_and_evaluate): an evaluation runs after a
    checkpoint is saved when at least `eval_spec.throttle_secs` passed since the previous one, and
    always once when training ends (on the final checkpoint). Exporters run after each evaluation.
    Returns `(last evaluation result, the last evaluation's export results, one per exporter)`.
    In an `evaluator` task (TF_CONFIG; only task 0) it trains nothing: it evaluates the checkpoints
    the training tasks write, as tf.estimator's evaluator does (see `_run_evaluator`).
    """
    from .estimator import NPUEstimator

    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"train_and_evaluate: `train_spec` must have type `tf.estimator.TrainSpec` (a TrainSpec). "
                        f"Got: {type(train_spec).__name__}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"train_and_evaluate: `eval_spec` must have type `tf.estimator.EvalSpec` (an EvalSpec). "
                        f"Got: {type(eval_spec).__name__}")
    if not isinstance(estimator, NPUEstimator):
        raise TypeError(f"train_and_evaluate: `estimator` must have type `tf.estimator.Estimator` (an NPUEstimator). "
                        f"Got: {type(estimator).__name__}")
    config = estimator.config
    if getattr(config, "task_type", None) == "evaluator":
        if getattr(config, "task_id", 0):
            raise ValueError(f"For distributed training, there can only be one `evaluator` task (with task id 0). "
                             f"Given task id {config.task_id}")
        return _run_evaluator(estimator, train_spec, eval_spec)
    listener = _EvaluateAfterSave(estimator, eval_spec, train_spec.max_steps)
    estimator.train(train_spec.input_fn, hooks=train_spec.hooks, max_steps=train_spec.max_steps,
                    saving_listeners=list(train_spec.saving_listeners) + [listener])
    latest = checkpoints.latest_checkpoint(estimator.model_dir)
    final_step = checkpoints.checkpoint_step(latest) if latest else None
    if latest is None:
        raise ValueError("train_and_evaluate: training saved no checkpoint to evaluate (save_checkpoints_steps=0?)")
    if listener.last_step != final_step:
        listener.evaluate(final_step, final=True)
    return listener.last_result, listener.export_results


def _run_evaluator(estimator, train_spec: TrainSpec, eval_spec: EvalSpec, poll_secs: float = 1.0):
    """An evaluator task's train_and_evaluate, as tf.estimator's: after `start_delay_secs`, evaluate each
    new checkpoint the training tasks write (at most once per `throttle_secs`) and run the exporters,
    until a checkpoint at `train_spec.max_steps` has been evaluated (without max_steps: forever)."""
    if eval_spec.start_delay_secs:
        logger.info("Waiting %g secs before starting evaluation.", eval_spec.start_delay_secs)
        time.sleep(eval_spec.start_delay_secs)
    evaluator = _EvaluateAfterSave(estimator, eval_spec, train_spec.max_steps)
    evaluated = None
    while True:
        started = time.monotonic()
        path = checkpoints.latest_checkpoint(estimator.model_dir)
        new = path is not None and path != evaluated
        if path is None:
            logger.info("Estimator is not trained yet. Will start an evaluation when a checkpoint is ready.")
        elif not new:
            logger.info("No new checkpoint ready for evaluation. Skip the current evaluation pass as evaluation "
                        "results are expected to be same for the same checkpoint.")
        else:
            evaluated = path
            step = checkpoints.checkpoint_step(path)
            final = train_spec.max_steps is not None and step is not None and step >= train_spec.max_steps
            evaluator.evaluate(step, final, path)
            global_step = evaluator.last_result["global_step"]
            if train_spec.max_steps is not None and global_step >= train_spec.max_steps:
                logger.info("Exiting evaluation, global_step=%s >= train max_steps=%s", global_step,
                            train_spec.max_steps)
                return evaluator.last_result, evaluator.export_results
        # At most one evaluation per throttle_secs; without a new checkpoint, poll (never spin).
        rest = eval_spec.throttle_secs - (time.monotonic() - started)
        time.sleep(max(rest, 0.0 if new else poll_secs))
