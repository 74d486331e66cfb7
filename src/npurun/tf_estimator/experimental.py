"""`tf.estimator.experimental`: npurun.estimator's (in-training evaluation, early stopping, stopping at a
checkpointed step, supervised receivers, logit functions) plus `LinearSDCA` (canned/sdca.py), which is a
premade-estimator optimizer and so lives in this layer."""
from ..estimator.experimental import (InMemoryEvaluatorHook, build_raw_supervised_input_receiver_fn,  # noqa: F401
                                      call_logit_fn, make_early_stopping_hook, make_stop_at_checkpoint_step_hook,
                                      stop_if_higher_hook, stop_if_lower_hook, stop_if_no_decrease_hook,
                                      stop_if_no_increase_hook)
from .canned.sdca import LinearSDCA  # noqa: F401

__all__ = ["InMemoryEvaluatorHook", "LinearSDCA", "build_raw_supervised_input_receiver_fn", "call_logit_fn",
           "make_early_stopping_hook", "make_stop_at_checkpoint_step_hook", "stop_if_higher_hook",
           "stop_if_lower_hook", "stop_if_no_decrease_hook", "stop_if_no_increase_hook"]
