"""Early stopping from evaluation results (tf.estimator.experimental.stop_if_* hooks).

The hooks are training hooks. Every `run_every_secs` seconds (or `run_every_steps` global
steps), and at their first run, they ask `should_stop_fn()`; when it says True, training stops
(the run ends normally: a final checkpoint is written). The `stop_if_*` predicates read the
evaluation results written to `eval_dir` (default `estimator.eval_dir()`, where `evaluate()`
and `train_and_evaluate` write them), in global-step order, ignoring steps below `min_steps`:
  - `stop_if_higher_hook` / `stop_if_lower_hook`: some evaluation's metric is above / below
    `threshold`;
  - `stop_if_no_decrease_hook` / `stop_if_no_increase_hook`: the metric did not improve for
    `max_steps_without_decrease` (/ `_increase`) global steps since its best evaluation.
"""
from __future__ import annotations

import collections
import glob
import logging
import operator
import os

import tensorflow as tf

_v1 = tf.compat.v1
logger = logging.getLogger("npurun")


def read_eval_metrics(eval_dir):
    """{global step: {metric: value}} from the event files in `eval_dir`, ordered by step."""
    results = collections.defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(os.fsdecode(eval_dir), "*.tfevents.*"))):
        try:
            for event in _v1.train.summary_iterator(path):
                if not event.HasField("summary"):
                    continue
                for value in event.summary.value:
                    if value.HasField("simple_value"):
                        results[event.step][value.tag] = value.simple_value
        except tf.errors.DataLossError as error:
            # As tf.estimator: a damaged (e.g. half-written) event file keeps what was read before the damage.
            logger.warning("Skipping rest of the file due to encountering data corruption error; file path: %s; "
                           "original error raised by `tf.train.summary_iterator`: %s", path, error)
    return collections.OrderedDict(sorted(results.items()))


class _StopOnPredicateHook(_v1.train.SessionRunHook):
    def __init__(self, should_stop_fn, run_every_secs, run_every_steps):
        self._should_stop_fn = should_stop_fn
        self._timer = _v1.train.SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)

    def begin(self):
        self._global_step = _v1.train.get_global_step()
        if self._global_step is None:
            raise RuntimeError("Early stopping hooks need a global step (tf.compat.v1.train.get_or_create_global_step)")

    def before_run(self, run_context):
        return _v1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = int(run_values.results)
        if not self._timer.should_trigger_for_step(step):
            return
        self._timer.update_last_triggered_step(step)
        if self._should_stop_fn():
            logger.info("Requesting early stopping at global step %d", step)
            run_context.request_stop()


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60, run_every_steps=None):
    """A training hook that stops training when `should_stop_fn()` returns True (see the module doc)."""
    from .estimator import NPUEstimator

    if not isinstance(estimator, NPUEstimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator` (an NPUEstimator). Got: "
                        f"{type(estimator)}")
    if not callable(should_stop_fn):
        raise TypeError(f"`should_stop_fn` must be callable; got {should_stop_fn!r}")
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of run_every_secs and run_every_steps can be set (got "
                         f"run_every_secs={run_every_secs!r}, run_every_steps={run_every_steps!r})")
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)


def _metric_hook(estimator, metric_name, eval_dir, min_steps, run_every_secs, run_every_steps, decide):
    eval_dir = eval_dir or estimator.eval_dir()

    def should_stop():
        return decide(_metric_values(read_eval_metrics(eval_dir), metric_name, min_steps))
    return make_early_stopping_hook(estimator, should_stop, run_every_secs, run_every_steps)


def _metric_values(results, metric_name, min_steps):
    values = []
    for step, metrics in results.items():
        if step < min_steps:
            continue
        if metric_name not in metrics:
            raise ValueError(f"Early stopping: metric {metric_name!r} is not among the evaluation results at step "
                             f"{step} ({sorted(metrics)})")
        values.append((step, metrics[metric_name]))
    return values


def _threshold_hook(estimator, metric_name, threshold, eval_dir, min_steps, run_every_secs, run_every_steps,
                    beyond):
    def decide(values):
        return any(beyond(value, threshold) for _, value in values)
    return _metric_hook(estimator, metric_name, eval_dir, min_steps, run_every_secs, run_every_steps, decide)


def _no_improvement_hook(estimator, metric_name, patience, eval_dir, min_steps, run_every_secs, run_every_steps,
                         better):
    def decide(values):
        best = best_step = None
        for step, value in values:
            if best is None or better(value, best):
                best, best_step = value, step
            if step - best_step >= patience:
                return True
        return False
    return _metric_hook(estimator, metric_name, eval_dir, min_steps, run_every_secs, run_every_steps, decide)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0, run_every_secs=60,
                        run_every_steps=None):
    """Stop when an evaluation's `metric_name` is higher than `threshold`."""
    return _threshold_hook(estimator, metric_name, threshold, eval_dir, min_steps, run_every_secs, run_every_steps,
                           operator.gt)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0, run_every_secs=60,
                       run_every_steps=None):
    """Stop when an evaluation's `metric_name` is lower than `threshold`."""
    return _threshold_hook(estimator, metric_name, threshold, eval_dir, min_steps, run_every_secs, run_every_steps,
                           operator.lt)


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease, eval_dir=None, min_steps=0,
                             run_every_secs=60, run_every_steps=None):
    """Stop when `metric_name` did not decrease for `max_steps_without_decrease` global steps."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_decrease, eval_dir, min_steps,
                                run_every_secs, run_every_steps, operator.lt)


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase, eval_dir=None, min_steps=0,
                             run_every_secs=60, run_every_steps=None):
    """Stop when `metric_name` did not increase for `max_steps_without_increase` global steps."""
    return _no_improvement_hook(estimator, metric_name, max_steps_without_increase, eval_dir, min_steps,
                                run_every_secs, run_every_steps, operator.gt)
