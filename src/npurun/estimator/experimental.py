"""`tf.estimator.experimental`: in-training evaluation, early stopping, supervised receivers, logit functions."""
from __future__ import annotations

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
