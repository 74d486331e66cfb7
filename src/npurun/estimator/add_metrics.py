"""`tf.estimator.add_metrics(estimator, metric_fn)`: the same model with more evaluation metrics."""
from __future__ import annotations

import inspect

from .inputs import call_with_accepted, fn_args
from .spec import ModeKeys, NPUEstimatorSpec

METRIC_FN_ARGS = ("labels", "predictions", "features", "config")


def add_metrics(estimator, metric_fn):
    """A new estimator of `estimator`'s class, model_dir, config and params whose evaluation also
    has the metrics `metric_fn` returns.

    `metric_fn` takes any of `labels`, `predictions`, `features`, `config` (by name) and returns a
    dict of metrics: Keras metric objects (after `update_state`) or (value, update_op) pairs. Its
    names override model_fn's metrics of the same name.
    """
    unexpected = [name for name in fn_args(metric_fn) if name not in METRIC_FN_ARGS]
    if unexpected:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: {unexpected}; allowed: "
                         f"{list(METRIC_FN_ARGS)}")
    model_fn = estimator.model_fn  # bound to the estimator's params

    def new_model_fn(features, labels, mode, config):
        spec = model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        available = {"labels": labels, "predictions": spec.predictions, "features": features, "config": config}
        metrics = call_with_accepted(metric_fn, available, "metric_fn")
        if not isinstance(metrics, dict):
            raise TypeError(f"metric_fn must return a dict of metrics; got {type(metrics).__name__}")
        fields = {**spec._asdict(), "eval_metric_ops": {**spec.eval_metric_ops, **metrics}}
        if isinstance(spec, NPUEstimatorSpec):
            fields["host_call"] = spec.host_call
        return type(spec)(**fields)

    return _model_fn_class(estimator)(model_fn=new_model_fn, model_dir=estimator.model_dir, config=estimator.config,
                                      warm_start_from=estimator._warm_start_from)


def _model_fn_class(estimator):
    """The nearest class of `estimator` built from a model_fn: its own for an Estimator (or a subclass taking
    `model_fn`), the Estimator a premade one derives from (DNNClassifier takes feature columns, not a model_fn;
    tf.estimator returns a plain Estimator for those too)."""
    for cls in type(estimator).__mro__:
        init = vars(cls).get("__init__")
        if init is not None and "model_fn" in inspect.signature(init).parameters:
            return cls
    return type(estimator)
