"""What a model_fn returns and what train_and_evaluate is given.

`EstimatorSpec` and `ModeKeys` keep the meaning they had in tf.estimator, so existing model
functions run unchanged; `NPUEstimatorSpec` adds the Ascend adapter's `host_call`.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Optional, Sequence

import tensorflow as tf

from .mode_keys import ModeKeys  # noqa: F401  (re-exported: npurun.estimator.spec.ModeKeys)
from .tf_conformance import step_count  # a float step count counts as in tf.estimator (5.5: 6)

# The evaluation result holding the mean of the spec's loss (tf.estimator's model_fn.LOSS_METRIC_KEY), unless
# eval_metric_ops defines a metric of that name itself.
LOSS_METRIC_KEY = "loss"

# tf.estimator.EstimatorSpec's fields, in its order (model functions may pass them positionally).
_SpecTuple = collections.namedtuple(
    "EstimatorSpec",
    ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs", "training_chief_hooks",
     "training_hooks", "scaffold", "evaluation_hooks", "prediction_hooks"])


class EstimatorSpec(_SpecTuple):
    """The ops a model_fn built for one mode.

    Rules (checked here, as tf.estimator checks them, so a wrong spec fails where it is built;
    messages keep tf.estimator's wording, e.g. "Missing loss."):
      - `mode` is one of `ModeKeys`.
      - TRAIN needs `loss` (a scalar, or shape [1]) and `train_op` (a tensor or op); the train_op
        should advance the global step
        (`optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())`).
      - EVAL needs `loss`; `eval_metric_ops` maps names to `(value_op, update_op)` pairs such as
        those of `tf.compat.v1.metrics`, or to Keras metric objects whose `update_state` model_fn
        called (see keras_metrics.py).
      - PREDICT needs `predictions`, a tensor or a dict of tensors whose first dimension is the batch.
      - tensors and ops come from the graph model_fn was called in.
      - `export_outputs` maps signature names to export outputs (see `export_output`); for PREDICT
        the default serves `predictions` under `serving_default`.
      - the `*_hooks` are `tf.compat.v1.train.SessionRunHook`s run in that mode;
        `training_chief_hooks` only on the chief.
      - `scaffold` is a `tf.compat.v1.train.Scaffold`: its saver (a Saver or a `tf.train.Checkpoint`),
        init_op, init_feed_dict, init_fn, ready_op and local_init_op are used (see scaffolds.py).
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None, scaffold=None,
                evaluation_hooks=None, prediction_hooks=None, **extra):
        if extra:
            raise TypeError(f"EstimatorSpec got unexpected keyword argument(s) {sorted(extra)}")
        if mode is not None and mode not in ModeKeys.ALL:  # None: the mode model_fn is called in
            raise ValueError(f"EstimatorSpec: mode must be one of {ModeKeys.ALL}; got {mode!r}")
        from . import spec_checks

        train_op = spec_checks.train_op(train_op, mode)
        loss = spec_checks.loss(loss, mode)
        predictions = spec_checks.predictions(predictions, mode)
        eval_metric_ops = spec_checks.eval_metric_ops(eval_metric_ops)
        if mode == ModeKeys.PREDICT:
            from .export_output import with_default

            export_outputs = with_default(export_outputs, predictions)
        scaffold = spec_checks.scaffold(scaffold)
        if scaffold is None:  # as tf.estimator; a Scaffold without a saver leaves saving to the Estimator
            scaffold = tf.compat.v1.train.Scaffold()
        hooks = {}
        for label, value in (("training_chief_hooks", training_chief_hooks), ("training_hooks", training_hooks),
                             ("evaluation_hooks", evaluation_hooks), ("prediction_hooks", prediction_hooks)):
            hooks[label] = tuple(check_hooks(value, f"EstimatorSpec.{label}"))
        self = super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops, export_outputs,
                               hooks["training_chief_hooks"], hooks["training_hooks"], scaffold,
                               hooks["evaluation_hooks"], hooks["prediction_hooks"])
        return self

    @property
    def host_call(self):
        """Only NPUEstimatorSpec carries a host_call; plain specs have none."""
        return None

    def _replace(self, **changes):
        """A copy with `changes`, checked as a new spec is (tf.estimator's rule); the mode stays."""
        if "mode" in changes and changes["mode"] != self.mode:
            raise ValueError(f"mode of EstimatorSpec cannot be changed (from {self.mode!r} to {changes['mode']!r})")
        return type(self)(**{**self._fields_to_copy(), **changes})

    def _fields_to_copy(self):
        return self._asdict()


class NPUEstimatorSpec(EstimatorSpec):
    """An EstimatorSpec with the Ascend adapter's `host_call=(fn, tensors)`.

    `tensors` is a list or a dict of tensors of one training step; `fn` takes them (as positional
    or keyword arguments) and returns summary ops built with `tf.compat.v1.summary` (or None).
    The Estimator calls `fn` once, at graph building, on host-side placeholders; its summaries are
    then computed from the values of every step that is a multiple of `save_summary_steps` and
    written at that step. With `iterations_per_loop` N > 1 the tensors of each of the N
    iterations are kept (they need static shapes), so per-step summaries exist even though the
    host sees one call per N steps. Keep them small: they leave the device every step.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None, scaffold=None,
                evaluation_hooks=None, prediction_hooks=None, host_call=None, **extra):
        self = super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops, export_outputs,
                               training_chief_hooks, training_hooks, scaffold, evaluation_hooks, prediction_hooks,
                               **extra)
        if host_call is not None:
            if not (isinstance(host_call, (tuple, list)) and len(host_call) == 2 and callable(host_call[0])):
                raise TypeError("NPUEstimatorSpec: host_call must be a (fn, tensors) pair with a callable fn")
            if not isinstance(host_call[1], (list, tuple, dict)):
                raise TypeError("NPUEstimatorSpec: host_call tensors must be a list, tuple or dict of tensors")
        self._host_call = host_call
        return self

    @property
    def host_call(self):
        return self._host_call

    def _fields_to_copy(self):
        return {**self._asdict(), "host_call": self._host_call}


def check_hooks(hooks, where, wording="All hooks must be SessionRunHook instances, given:"):
    """The hooks as a list; TypeError (tf.estimator's `wording`) for anything not a SessionRunHook."""
    if hooks is None:
        return []
    if isinstance(hooks, (str, bytes)) or not hasattr(hooks, "__iter__"):
        raise TypeError(f"{where}: hooks must be a list of tf.compat.v1.train.SessionRunHook; got {hooks!r}")
    hooks = list(hooks)
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"{where}: {wording} {hook!r} "
                            f"({type(hook).__name__}; hooks subclass tf.compat.v1.train.SessionRunHook)")
    return hooks


_SPEC_HOOKS_WORDING = "All hooks must be `SessionRunHook` instances, given:"  # TrainSpec/EvalSpec's words


def _callable_input_fn(input_fn, where):
    if not callable(input_fn):
        raise TypeError(f"{where}: `input_fn` must be callable, given: {input_fn!r}")


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """Training half of `train_and_evaluate`: `input_fn`, `max_steps` (None: until input ends), `hooks`,
    `saving_listeners` (tf.compat.v1.train.CheckpointSaverListener)."""

    def __new__(cls, input_fn: Callable, max_steps: Optional[int] = None, hooks: Sequence = (),
                saving_listeners: Sequence = ()):
        _callable_input_fn(input_fn, "TrainSpec")
        max_steps = step_count(max_steps, "max_steps")
        hooks = check_hooks(hooks, "TrainSpec.hooks", _SPEC_HOOKS_WORDING)
        listeners = list(saving_listeners or ())
        for listener in listeners:
            if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
                raise TypeError(f"TrainSpec: All saving_listeners must be `CheckpointSaverListener` instances, "
                                f"given: {listener!r}")
        return super().__new__(cls, input_fn, max_steps, tuple(hooks), tuple(listeners))


class EvalSpec(collections.namedtuple(
        "EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"])):
    """Evaluation half of `train_and_evaluate`.

    `steps` batches per evaluation (None: until input ends); `exporters` (an Exporter or a list
    of them with distinct names, see exporters.py) have
    `export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)` and `name`;
    `throttle_secs`: at least this many seconds between evaluations after new checkpoints;
    `start_delay_secs` is accepted for compatibility (in-process training has nothing to wait for).
    """

    def __new__(cls, input_fn: Callable, steps: Optional[int] = 100, name: Optional[str] = None,
                hooks: Sequence = (), exporters: Any = None, start_delay_secs: float = 120,
                throttle_secs: float = 600):
        _callable_input_fn(input_fn, "EvalSpec")
        steps = step_count(steps, "steps")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"EvalSpec: `name` must be string, given: {name!r}")
        hooks = check_hooks(hooks, "EvalSpec.hooks", _SPEC_HOOKS_WORDING)
        for label, value in (("start_delay_secs", start_delay_secs), ("throttle_secs", throttle_secs)):
            if value is None or value < 0:
                raise ValueError(f"EvalSpec: Must specify {label} >= 0, given: {value!r}")
        if exporters is None:
            exporters = ()
        elif not isinstance(exporters, (list, tuple)):
            exporters = (exporters,)
        names = set()
        for exporter in exporters:
            if not (hasattr(exporter, "export") and hasattr(exporter, "name")):
                raise TypeError(f"EvalSpec: `exporters` must be an Exporter, an iterable of Exporter, or `None`, "
                                f"found {exporter!r}")
            if not exporter.name:
                raise ValueError(f"EvalSpec: An Exporter cannot have a name that is `None` or empty. All exporter "
                                 f"names: {[e.name for e in exporters]}")
            if not isinstance(exporter.name, str):
                raise ValueError(f"EvalSpec: An Exporter must have a string name. Given: {type(exporter.name)}")
            if exporter.name in names:
                raise ValueError(f"EvalSpec: `exporters` must have unique names. Such a name cannot be `None`. "
                                 f"All exporter names: {[e.name for e in exporters]}")
            names.add(exporter.name)
        return super().__new__(cls, input_fn, steps, name, tuple(hooks), tuple(exporters),
                               start_delay_secs, throttle_secs)
