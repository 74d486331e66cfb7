"""What a model_fn returns and what train_and_evaluate is given.

`EstimatorSpec` and `ModeKeys` keep the meaning they had in tf.estimator, so existing model
functions run unchanged; `NPUEstimatorSpec` adds the Ascend adapter's `host_call`.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Optional, Sequence

import tensorflow as tf


class ModeKeys:
    """The three modes a model_fn is called in (the values tf.estimator used)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"

    ALL = (TRAIN, EVAL, PREDICT)


_SpecTuple = collections.namedtuple(
    "EstimatorSpec",
    ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs", "training_hooks",
     "evaluation_hooks", "prediction_hooks", "scaffold"])


class EstimatorSpec(_SpecTuple):
    """The ops a model_fn built for one mode.

    Rules (checked here, so a wrong spec fails where it is built):
      - `mode` is one of `ModeKeys`.
      - TRAIN needs `loss` (a scalar) and `train_op`; the train_op should advance the global step
        (`optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())`).
      - EVAL needs `loss`; `eval_metric_ops` maps names to `(value_op, update_op)` pairs such as
        those of `tf.compat.v1.metrics`.
      - PREDICT needs `predictions`, a tensor or a dict of tensors whose first dimension is the batch.
      - `export_outputs` maps signature names to export outputs (see `npurun.estimator.export`);
        when None, exporting serves `predictions` under `serving_default`.
      - the `*_hooks` are `tf.compat.v1.train.SessionRunHook`s run in that mode.
      - `scaffold` is accepted for compatibility; only its `saver` (if set) is used.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_hooks=None, evaluation_hooks=None, prediction_hooks=None,
                scaffold=None, **extra):
        if mode not in ModeKeys.ALL:
            raise ValueError(f"EstimatorSpec: mode must be one of {ModeKeys.ALL}; got {mode!r}")
        if mode == ModeKeys.TRAIN and (loss is None or train_op is None):
            raise ValueError("EstimatorSpec: TRAIN mode needs both `loss` and `train_op`")
        if mode == ModeKeys.EVAL and loss is None:
            raise ValueError("EstimatorSpec: EVAL mode needs `loss`")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("EstimatorSpec: PREDICT mode needs `predictions`")
        if loss is not None:
            loss = _scalar_loss(loss)
        eval_metric_ops = dict(eval_metric_ops or {})
        for name, pair in eval_metric_ops.items():
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"EstimatorSpec: eval_metric_ops[{name!r}] must be a (value_op, update_op) "
                                f"pair; got {type(pair).__name__}")
        hooks = {}
        for label, value in (("training_hooks", training_hooks), ("evaluation_hooks", evaluation_hooks),
                             ("prediction_hooks", prediction_hooks)):
            hooks[label] = tuple(_check_hooks(value or (), f"EstimatorSpec.{label}"))
        self = super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops, export_outputs,
                               hooks["training_hooks"], hooks["evaluation_hooks"], hooks["prediction_hooks"],
                               scaffold)
        return self

    @property
    def host_call(self):
        """Only NPUEstimatorSpec carries a host_call; plain specs have none."""
        return None


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
                export_outputs=None, training_hooks=None, evaluation_hooks=None, prediction_hooks=None,
                scaffold=None, host_call=None, **extra):
        self = super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops, export_outputs,
                               training_hooks, evaluation_hooks, prediction_hooks, scaffold)
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


def _scalar_loss(loss):
    loss = tf.convert_to_tensor(loss)
    if loss.shape.rank not in (None, 0):
        if loss.shape.num_elements() == 1:
            return tf.reshape(loss, [])
        raise ValueError(f"EstimatorSpec: loss must be a scalar; got shape {loss.shape}")
    return loss


def _check_hooks(hooks, where):
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"{where}: every hook must be a tf.compat.v1.train.SessionRunHook; "
                            f"got {type(hook).__name__}")
        yield hook


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """Training half of `train_and_evaluate`: `input_fn`, `max_steps` (None: until input ends), `hooks`."""

    def __new__(cls, input_fn: Callable, max_steps: Optional[int] = None, hooks: Sequence = (),
                saving_listeners: Sequence = ()):
        if not callable(input_fn):
            raise TypeError("TrainSpec: input_fn must be callable")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"TrainSpec: max_steps must be > 0; got {max_steps}")
        return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()), tuple(saving_listeners or ()))


class EvalSpec(collections.namedtuple(
        "EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"])):
    """Evaluation half of `train_and_evaluate`.

    `steps` batches per evaluation (None: until input ends); `exporters` have
    `export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)` and `name`;
    `throttle_secs`: at least this many seconds between evaluations after new checkpoints;
    `start_delay_secs` is accepted for compatibility (in-process training has nothing to wait for).
    """

    def __new__(cls, input_fn: Callable, steps: Optional[int] = 100, name: Optional[str] = None,
                hooks: Sequence = (), exporters: Any = None, start_delay_secs: float = 120,
                throttle_secs: float = 600):
        if not callable(input_fn):
            raise TypeError("EvalSpec: input_fn must be callable")
        if steps is not None and steps <= 0:
            raise ValueError(f"EvalSpec: steps must be > 0 or None; got {steps}")
        if throttle_secs < 0 or start_delay_secs < 0:
            raise ValueError("EvalSpec: throttle_secs and start_delay_secs must be >= 0")
        if exporters is None:
            exporters = ()
        elif not isinstance(exporters, (list, tuple)):
            exporters = (exporters,)
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()), tuple(exporters),
                               start_delay_secs, throttle_secs)

