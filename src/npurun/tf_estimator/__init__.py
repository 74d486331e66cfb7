"""`tf.estimator` for TensorFlow 2.16+ users (TensorFlow 2.21 ships none), on NPUEstimator.

A room of its own: the classic Estimator API with tf.estimator's signatures and defaults, backed by
npurun's Estimator (`npurun.estimator`), so device loops, precision modes, dumps and distribution
apply to it. Here:

- `table`: the `tf.estimator` namespace, name by name (a coverage table, `npurun.names.coverage`);
- `Estimator` (NPUEstimator with `tf.estimator.Estimator`'s signature), `RunConfig`
  (`run_config`: an NPURunConfig with tf.estimator's signature and defaults), `inputs`
  (`numpy_inputs`: `numpy_input_fn`, `pandas_input_fn`);
- `Namespace`: a module built from a table, which is what `tf.estimator` is while npurun's
  compatibility layer is active (`npurun.adapter.tensorflow` attaches it).

Imports: `npurun.estimator`, `npurun.config`, `npurun.names`; never the adapters, the TF 1 world or
the tools above it.
"""
from __future__ import annotations

import os
import sys
from importlib import import_module
import types
import warnings

from ..config import NPURunConfig
from ..names import coverage
from .table import TF_ESTIMATOR

class Namespace(types.ModuleType):
    """A module-like namespace whose names come from a coverage table's entries."""

    def __init__(self, table: coverage.AdapterModule):
        super().__init__(table.name, table.doc)
        self._table = table

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        entry = self._table.names.get(name)
        if entry is None:
            raise AttributeError(f"{self.__name__}.{name} is not provided by npurun's compatibility layer "
                                 f"(TensorFlow 2.21 has no tf.estimator; see docs/compat.md for what is)")
        value = coverage.materialize(self.__name__, name, entry)
        if not coverage.is_placeholder(value):
            self.__dict__[name] = value
        return value

    def __dir__(self):
        return sorted(self._table.names)


_NAMESPACE = []


def estimator_namespace() -> Namespace:
    """The `tf.estimator` module (one, whoever attaches it: the compatibility layer or `npurun.estimator_api`)."""
    if not _NAMESPACE:
        from .table import ESTIMATOR_NAMESPACE

        _NAMESPACE.append(Namespace(ESTIMATOR_NAMESPACE))
    return _NAMESPACE[0]


# ---- RunConfig: run_config.py -------------------------------------------------------------------
from .run_config import TF_DEFAULT_CHECKPOINT_SECS, TF_RUN_CONFIG_PARAMETERS, RunConfig  # noqa: E402,F401


# ---- Estimator (built on first use: it imports npurun.estimator) -------------------------------------
def _make_estimator():
    base = coverage.resolve(TF_ESTIMATOR["NPUEstimator"], "tf.estimator.Estimator")

    class Estimator(base):
        """`tf.estimator.Estimator(model_fn, model_dir, config, params, warm_start_from)` as an NPUEstimator.

        `config` may be a `tf.estimator.RunConfig` (an NPURunConfig here) or an NPURunConfig.
        """

        def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
            _check_not_overridden(Estimator, type(self))
            super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, params=params,
                             warm_start_from=warm_start_from)

        def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                               checkpoint_path=None, experimental_mode="infer"):
            """As NPUEstimator's, returning the export directory as bytes (tf.estimator's type)."""
            if experimental_mode != "infer":
                raise ValueError(f"export_saved_model: experimental_mode={experimental_mode!r} is not supported by "
                                 f"npurun; only ModeKeys.PREDICT ('infer') graphs are exported")
            path = super().export_saved_model(export_dir_base, serving_input_receiver_fn, assets_extra=assets_extra,
                                              as_text=as_text, checkpoint_path=checkpoint_path)
            return os.fsencode(path)

        def experimental_export_all_saved_models(self, export_dir_base, input_receiver_fn_map, assets_extra=None,
                                                 as_text=False, checkpoint_path=None):
            """tf.estimator's multi-mode export, for the mode npurun exports: `input_receiver_fn_map` must map
            only ModeKeys.PREDICT ('infer') to a serving_input_receiver_fn (TRAIN/EVAL: ValueError naming them)."""
            others = sorted(mode for mode, fn in input_receiver_fn_map.items() if fn is not None and mode != "infer")
            if others:
                raise ValueError(f"experimental_export_all_saved_models: modes {others} are not supported by npurun; "
                                 f"only ModeKeys.PREDICT ('infer') graphs are exported")
            if input_receiver_fn_map.get("infer") is None:
                raise ValueError("experimental_export_all_saved_models: input_receiver_fn_map has no "
                                 "serving_input_receiver_fn for ModeKeys.PREDICT ('infer')")
            return self.export_saved_model(export_dir_base, input_receiver_fn_map["infer"], assets_extra=assets_extra,
                                           as_text=as_text, checkpoint_path=checkpoint_path)

        def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                              checkpoint_path=None, strip_default_attrs=False):
            """tf.estimator's deprecated name, whose exports keep default-valued attributes unless asked."""
            return os.fsencode(self._export(export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                                            checkpoint_path, strip_default_attrs=strip_default_attrs))

    Estimator.__module__ = "tensorflow.estimator"
    Estimator.__qualname__ = "Estimator"
    return Estimator


# tf.estimator.Estimator's public members a subclass may not override (it may override model_fn and
# latest_checkpoint; npurun's own additions are not guarded).
_GUARDED = {"config", "eval_dir", "evaluate", "experimental_export_all_saved_models", "export_saved_model",
            "export_savedmodel", "get_variable_names", "get_variable_value", "model_dir", "params", "predict",
            "train"}


def _check_not_overridden(base, cls) -> None:
    """tf.estimator's rule: a subclass of Estimator may add methods but not override its public ones
    (the Estimator calls them itself, so an override would change train/evaluate behind its back)."""
    if cls is base or cls.__name__ == "TPUEstimator":  # TPUEstimator is special-cased by tf.estimator too
        return
    overridden = sorted({name for klass in cls.__mro__[:cls.__mro__.index(base)] for name in vars(klass)
                         if name in _GUARDED and getattr(cls, name) is not getattr(base, name)})
    if overridden:
        raise ValueError(f"Subclasses of Estimator cannot override members of Estimator. {cls} does override "
                         f"{overridden}")


# ---- inputs.numpy_input_fn: numpy_inputs.py ---------------------------------------------------------
from .numpy_inputs import numpy_input_fn, pandas_input_fn  # noqa: E402

inputs = types.SimpleNamespace(numpy_input_fn=numpy_input_fn, pandas_input_fn=pandas_input_fn)


def __getattr__(name):
    if name == "Estimator":
        value = _make_estimator()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
