"""`tf.estimator.experimental`: npurun.estimator's (in-training evaluation, early stopping, stopping at a
checkpointed step, supervised receivers, logit functions) plus `LinearSDCA` (canned/sdca.py), which is a
premade-estimator optimizer and so lives in this layer, and tf.compat.v1.estimator.experimental's v1-only
names: `KMeans` (canned/kmeans.py), `dnn_logit_fn_builder`, `linear_logit_fn_builder` (canned/logit_fns.py)."""
from ..estimator.experimental import (InMemoryEvaluatorHook, build_raw_supervised_input_receiver_fn,  # noqa: F401
                                      call_logit_fn, make_early_stopping_hook, make_stop_at_checkpoint_step_hook,
                                      stop_if_higher_hook, stop_if_lower_hook, stop_if_no_decrease_hook,
                                      stop_if_no_increase_hook)
from .canned.logit_fns import dnn_logit_fn_builder, linear_logit_fn_builder  # noqa: F401
from .canned.sdca import LinearSDCA  # noqa: F401

__all__ = ["InMemoryEvaluatorHook", "KMeans", "LinearSDCA", "RNNClassifier", "RNNEstimator", "build_raw_supervised_input_receiver_fn", "call_logit_fn",
           "make_early_stopping_hook", "make_stop_at_checkpoint_step_hook", "stop_if_higher_hook",
           "stop_if_lower_hook", "stop_if_no_decrease_hook", "stop_if_no_increase_hook", "dnn_logit_fn_builder",
           "linear_logit_fn_builder"]


def __getattr__(name):
    if name == "KMeans":  # built on first use: it subclasses the Estimator
        from .canned.kmeans import KMeansClustering

        globals()[name] = KMeansClustering
        return KMeansClustering
    if name in ("RNNClassifier", "RNNEstimator"):
        from .canned import rnn

        globals()[name] = getattr(rnn, name)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
