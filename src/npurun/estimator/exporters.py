"""Exporters run by `train_and_evaluate` after evaluations (tf.estimator's LatestExporter, ...).

`EvalSpec(exporters=...)` takes any object with a `name` and
`export(estimator, export_path, checkpoint_path, eval_result, is_the_final_export)`;
train_and_evaluate calls it after each evaluation with `export_path = model_dir/export/<name>`.
The three provided, with tf.estimator's rules:
  - `LatestExporter`: exports after every evaluation, keeping the `exports_to_keep` newest;
  - `BestExporter`: exports when `compare_fn(best_eval_result, current_eval_result)` says the
    new result is better (default: smaller `loss`); the best so far is first read from the
    evaluation event files (`event_file_pattern` under model_dir). As in tf.estimator, the first
    export call of an exporter object always exports (a restarted job exports once, then only
    better results);
  - `FinalExporter`: exports once, after the final evaluation.
Exports are timestamped directories (`export_saved_model`); only those directories (10 digits)
are garbage-collected.
"""
from __future__ import annotations

import glob
import logging
import os
import shutil

import tensorflow as tf

from .inputs import fn_args

logger = logging.getLogger("npurun")


class Exporter:
    """Base of the exporters: a `name` and `export(...)` (see the module doc)."""

    @property
    def name(self):
        raise NotImplementedError

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError


class _SavedModelExport:
    def __init__(self, name, serving_input_receiver_fn, assets_extra, as_text):
        if not callable(serving_input_receiver_fn):
            raise ValueError(f"Exporter {name!r}: serving_input_receiver_fn must be a function returning a "
                             f"ServingInputReceiver; got {serving_input_receiver_fn!r}")
        self.name = name
        self.receiver_fn, self.assets_extra, self.as_text = serving_input_receiver_fn, assets_extra, as_text

    def __call__(self, estimator, export_path, checkpoint_path):
        return estimator.export_saved_model(export_path, self.receiver_fn, assets_extra=self.assets_extra,
                                            as_text=self.as_text, checkpoint_path=checkpoint_path)


def _check_keep(exports_to_keep):
    if exports_to_keep is not None and exports_to_keep <= 0:
        raise ValueError(f"`exports_to_keep`, if provided, must be a positive number; got {exports_to_keep!r}")


def garbage_collect(export_dir_base, exports_to_keep) -> None:
    """Delete all but the `exports_to_keep` newest timestamped exports under `export_dir_base`."""
    if exports_to_keep is None:
        return
    base = os.fsdecode(export_dir_base)
    versions = sorted((int(name), name) for name in (os.listdir(base) if os.path.isdir(base) else ())
                      if len(name) == 10 and name.isdigit())
    for _, name in versions[:-exports_to_keep]:
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)


class LatestExporter(Exporter):
    """Export after every evaluation, keeping the `exports_to_keep` newest (None: all)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False, exports_to_keep=5):
        self._export = _SavedModelExport(name, serving_input_receiver_fn, assets_extra, as_text)
        _check_keep(exports_to_keep)
        self._exports_to_keep = exports_to_keep

    @property
    def name(self):
        return self._export.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        result = self._export(estimator, export_path, checkpoint_path)
        garbage_collect(export_path, self._exports_to_keep)
        return result


class FinalExporter(Exporter):
    """Export once, after the final evaluation of train_and_evaluate."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._export = _SavedModelExport(name, serving_input_receiver_fn, assets_extra, as_text)

    @property
    def name(self):
        return self._export.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        return self._export(estimator, export_path, checkpoint_path)


def loss_smaller(best_eval_result, current_eval_result) -> bool:
    """BestExporter's default comparison: the current result's `loss` is smaller."""
    for label, result in (("best_eval_result", best_eval_result), ("current_eval_result", current_eval_result)):
        if not result or "loss" not in result:
            raise ValueError(f"{label} cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


def _check_compare_fn(compare_fn):
    if compare_fn is None:
        raise ValueError("`compare_fn` must not be None.")
    args = set(fn_args(compare_fn))
    for needed in ("best_eval_result", "current_eval_result"):
        if needed not in args:
            raise ValueError(f"compare_fn ({compare_fn}) must include {needed} argument.")
    extra = sorted(args - {"best_eval_result", "current_eval_result"})
    if extra:
        raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: {extra}")


class BestExporter(Exporter):
    """Export when the evaluation result is the best so far (see the module doc)."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None, event_file_pattern="eval/*.tfevents.*",
                 compare_fn=loss_smaller, assets_extra=None, as_text=False, exports_to_keep=5):
        _check_compare_fn(compare_fn)
        self._export = _SavedModelExport(name, serving_input_receiver_fn, assets_extra, as_text)
        _check_keep(exports_to_keep)
        self._compare_fn = compare_fn
        self._event_file_pattern = event_file_pattern
        self._exports_to_keep = exports_to_keep
        self._model_dir = None
        self._best_eval_result = None
        self._has_exported = False

    @property
    def name(self):
        return self._export.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._best_from_events(os.path.join(self._model_dir, self._event_file_pattern))
        better = (self._best_eval_result is None
                  or not self._has_exported  # tf.estimator's rule: the first export of this exporter
                  or self._compare_fn(best_eval_result=self._best_eval_result, current_eval_result=eval_result))
        if not better:
            return None
        self._best_eval_result = eval_result
        result = self._export(estimator, export_path, checkpoint_path)
        garbage_collect(export_path, self._exports_to_keep)
        self._has_exported = True
        return result

    def _best_from_events(self, pattern):
        best = None
        for path in sorted(glob.glob(pattern)):
            for event in tf.compat.v1.train.summary_iterator(path):
                if not event.HasField("summary"):
                    continue
                result = {v.tag: v.simple_value for v in event.summary.value if v.HasField("simple_value")}
                if result and (best is None or self._compare_fn(best_eval_result=best, current_eval_result=result)):
                    best = result
        return best
