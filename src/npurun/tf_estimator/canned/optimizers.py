"""The optimizers of the premade estimators: tf.estimator 2.15's names, defaults and variable names.

`get_optimizer_instance_v2` (what `tf.estimator.DNNClassifier(optimizer=...)` and the other premade
estimators use) gives a Keras 2 legacy optimizer (`tf_keras.optimizers.legacy.*`, the classes TF 2.15
used; their slots are `training/<Name>/<variable>/<slot>`, their hyperparameters variables of their
own, so a TF 2.15 checkpoint restores). Accepted: a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD')
with the optimizer's own default learning rate; a tf-keras optimizer (a non-legacy one is converted
to its legacy class, as tf.estimator 2.15 did); a callable returning one. npurun also takes, where
TF 2.15 refused them: a Keras 3 optimizer of one of those classes (its hyperparameters are given to
the tf-keras legacy class of the same name: Keras 3 optimizers do not run in TensorFlow 1 graphs)
and a `tf.compat.v1.train.Optimizer` (what the TF 1 premade estimators took, and what Ascend's
NPU optimizer wrappers are).
"""
from __future__ import annotations

import inspect

import numpy as np
import tensorflow as tf

from ..head.base import is_keras2_optimizer, is_v1_optimizer, keras, keras_updates

_v1 = tf.compat.v1
_NAMES = ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD")
_LEGACY_CLASS = {"Adagrad": "Adagrad", "Adam": "Adam", "Ftrl": "Ftrl", "RMSProp": "RMSprop", "SGD": "SGD"}
_V1_CLASS = {"Adagrad": "AdagradOptimizer", "Adam": "AdamOptimizer", "Ftrl": "FtrlOptimizer",
             "RMSProp": "RMSPropOptimizer", "SGD": "GradientDescentOptimizer"}
_LEARNING_RATE = 0.05


def _legacy(name):
    return getattr(keras().optimizers.legacy, _LEGACY_CLASS[name])


def _has_default_learning_rate(cls) -> bool:
    parameter = inspect.signature(cls.__init__).parameters.get("learning_rate")
    return parameter is not None and parameter.default is not inspect.Parameter.empty


def _from_keras3(opt):
    """A Keras 3 optimizer as the tf-keras legacy optimizer of the same class and hyperparameters."""
    class_name = type(opt).__name__
    names = {v: k for k, v in _LEGACY_CLASS.items()}
    if class_name not in names and class_name not in _LEGACY_CLASS:
        raise ValueError(f"The given optimizer {type(opt)} is a Keras 3 optimizer, which cannot run in the TensorFlow 1 "
                         f"graph of an Estimator; pass one of {list(_NAMES)} (a name), a tf_keras.optimizers.legacy "
                         f"optimizer or a tf.compat.v1.train optimizer")
    cls = getattr(keras().optimizers.legacy, class_name)
    config = _keras3_config(opt)
    unsupported = [key for key in ("weight_decay", "ema_overwrite_frequency", "loss_scale_factor",
                                   "gradient_accumulation_steps") if config.get(key)]
    if config.get("use_ema"):
        unsupported.append("use_ema")
    config = {key: value.item() if isinstance(value, np.generic) else value for key, value in config.items()}
    if not isinstance(config.get("learning_rate"), (int, float)):
        unsupported.append("learning_rate (a schedule)")
    if unsupported:
        raise ValueError(f"The Keras 3 optimizer {class_name} uses {unsupported}, which its tf-keras legacy "
                         f"equivalent (what an Estimator's TensorFlow 1 graph runs) does not have; pass a "
                         f"tf_keras.optimizers.legacy.{class_name} instead")
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "name", "kwargs"}
    kwargs = {k: v for k, v in config.items() if k in accepted}
    kwargs.update({k: config[k] for k in ("clipnorm", "clipvalue", "global_clipnorm") if config.get(k) is not None})
    return cls(**kwargs)


def _plain(value):
    """A Keras 3 hyperparameter as a Python number (a variable's initial value in a TensorFlow 1 graph)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    for candidate in (value, getattr(value, "_value", None), getattr(value, "value", None)):
        if isinstance(candidate, tf.Variable):
            if _made_eagerly(candidate):
                from tensorflow.python.eager import context

                with context.eager_mode():  # a variable made eagerly (before the Estimator's graph)
                    return candidate.numpy().item()
            candidate = candidate.initial_value
        if tf.is_tensor(candidate):
            static = tf.get_static_value(candidate)
            if static is not None:
                return static.item()
    return value


def _made_eagerly(variable) -> bool:
    try:
        variable.graph  # noqa: B018 - eager variables have no graph
    except (AttributeError, RuntimeError):
        return True
    return False


def _keras3_config(opt):
    try:
        return opt.get_config()
    except NotImplementedError:  # in graph mode get_config reads its variables with numpy()
        names = ("learning_rate", "weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "use_ema",
                 "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps", "beta_1", "beta_2",
                 "epsilon", "amsgrad", "initial_accumulator_value", "momentum", "nesterov", "rho", "centered",
                 "learning_rate_power", "l1_regularization_strength", "l2_regularization_strength",
                 "l2_shrinkage_regularization_strength", "beta")
        config = {name: _plain(getattr(opt, name)) for name in names if hasattr(opt, name)}
        if hasattr(opt, "_learning_rate"):  # the variable (the property may give a read of it)
            config["learning_rate"] = _plain(opt._learning_rate)
        return config


def _is_keras3(opt) -> bool:
    try:
        import keras as keras3
    except ImportError:
        return False
    base = getattr(getattr(keras3, "optimizers", None), "Optimizer", None)
    return base is not None and isinstance(opt, base) and not is_keras2_optimizer(opt)


def get_optimizer_instance_v2(opt, learning_rate=None):
    """The optimizer of a tf.estimator 2.x premade estimator (see the module docstring)."""
    if isinstance(opt, str):
        if opt not in _NAMES:
            raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: {tuple(sorted(_NAMES))}")
        cls = _legacy(opt)
        if learning_rate:
            return cls(learning_rate=learning_rate)
        return cls() if _has_default_learning_rate(cls) else cls(learning_rate=_LEARNING_RATE)
    if callable(opt) and not (is_keras2_optimizer(opt) or is_v1_optimizer(opt) or _is_keras3(opt)):
        opt = opt()
    k = keras()
    if isinstance(opt, k.optimizers.Optimizer) and not isinstance(opt, k.optimizers.legacy.Optimizer):
        opt = k.__internal__.optimizers.convert_to_legacy_optimizer(opt)
    elif _is_keras3(opt):
        opt = _from_keras3(opt)
    if not (isinstance(opt, k.optimizers.legacy.Optimizer) or is_v1_optimizer(opt)):
        raise ValueError(f"The given object is not a tf.keras.optimizers.Optimizer instance. Given: {opt}")
    return opt


def get_optimizer_instance(opt, learning_rate=None):
    """tf.estimator 1.x's: a tf.compat.v1.train optimizer from a name (with `learning_rate`), a callable or
    an instance."""
    if isinstance(opt, str):
        if opt not in _NAMES:
            raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: {tuple(sorted(_NAMES))}")
        if not learning_rate:
            raise ValueError("learning_rate must be specified when opt is string.")
        return getattr(_v1.train, _V1_CLASS[opt])(learning_rate=learning_rate)
    if callable(opt) and not is_v1_optimizer(opt):
        opt = opt()
    if not is_v1_optimizer(opt):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt


def drives_global_step(optimizer) -> None:
    """Let a Keras optimizer's step counter be the global step (so applying it advances the step)."""
    if not is_v1_optimizer(optimizer):
        optimizer.iterations = _v1.train.get_or_create_global_step()


def apply(optimizer, loss, var_list, advance_global_step=True):
    """The update op of `optimizer` minimizing `loss` over `var_list`."""
    if is_v1_optimizer(optimizer):
        step = _v1.train.get_global_step() if advance_global_step else None
        return optimizer.minimize(loss, var_list=list(var_list), global_step=step)
    return keras_updates(optimizer, loss, var_list)
