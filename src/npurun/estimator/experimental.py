"""`tf.estimator.experimental`: in-training evaluation, early stopping, stopping at a checkpointed step,
supervised receivers, logit functions."""
from __future__ import annotations

import time

import tensorflow as tf

from .early_stopping import (make_early_stopping_hook, read_eval_metrics, stop_if_higher_hook,  # noqa: F401
                             stop_if_lower_hook, stop_if_no_decrease_hook, stop_if_no_increase_hook)
from .export import build_raw_supervised_input_receiver_fn  # noqa: F401
from .in_memory_evaluator import InMemoryEvaluatorHook  # noqa: F401
from .inputs import call_with_accepted


def call_logit_fn(logit_fn, features, mode, params, config):
    """Call `logit_fn` with the arguments it names among (features, mode, params, config) and check
    that it returns a tensor or a dict of tensors (logits), as tf.estimator.experimental's does."""
    available = {"features": features, "mode": mode, "params": params, "config": config}
    logits = call_with_accepted(logit_fn, available, "logit_fn", required=("features",))
    values = logits.values() if isinstance(logits, dict) else [logits]
    if not all(tf.is_tensor(value) for value in values):
        raise ValueError(f"logit_fn should return a Tensor or a dictionary mapping strings to Tensors; got "
                         f"{logits!r}")
    return logits


class _StopAtCheckpointStepHook(tf.compat.v1.train.SessionRunHook):
    """Stops a worker once the chief's newest checkpoint in `model_dir` is at `last_step` (tf.estimator's):
    after the worker's own step reaches it, the checkpoint is read, waiting `wait_after_file_check_secs`
    between reads (many workers reading one file at once is what the wait spares)."""

    def __init__(self, model_dir, last_step, wait_after_file_check_secs=30):
        if last_step is None:
            raise ValueError("last_step must be specified.")
        if model_dir is None:
            raise ValueError("model_dir must be specified.")
        self._model_dir = model_dir
        self._last_step = last_step
        self._wait_after_file_check_secs = wait_after_file_check_secs

    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use StopAtCheckpointStepHook.")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 < self._last_step:
            return
        if _checkpointed_step(self._model_dir) >= self._last_step:
            run_context.request_stop()
        else:
            time.sleep(self._wait_after_file_check_secs)


def _checkpointed_step(model_dir) -> int:
    """The global step of the newest checkpoint in `model_dir` (0 without one)."""
    from . import checkpoints

    path = checkpoints.latest_checkpoint(model_dir)
    try:
        return int(tf.train.load_variable(path, "global_step")) if path else 0
    except (tf.errors.OpError, ValueError):
        return 0


def make_stop_at_checkpoint_step_hook(estimator, last_step, wait_after_file_check_secs=30):
    """A hook stopping training at `last_step`: on the chief a StopAtStepHook, on other workers one that
    waits for the chief's checkpoint at that step (tf.estimator.experimental's)."""
    if estimator.config.is_chief:
        return tf.compat.v1.train.StopAtStepHook(last_step=last_step)
    return _StopAtCheckpointStepHook(estimator.model_dir, last_step, wait_after_file_check_secs)
