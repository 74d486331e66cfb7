"""`tf.keras.estimator.model_to_estimator` for tf-keras (Keras 2) models, on npurun's Estimator.

Hand-written rather than reused: tf-keras's own `model_to_estimator` imports the `tensorflow_estimator`
package (TensorFlow 2.16+ has none) and builds on its v1 Keras training internals. This one keeps
tf.estimator 2.15's behaviour (its keras_lib) with npurun's own code:

- `model_fn(features, labels, mode)` clones the compiled model in the Estimator's graph
  (`tf_keras.models.clone_model`, same layer and variable names) and calls it on the features: a
  dict keyed by the model's input names, a list in input order, or one tensor for a one-input model
  (`{'features': ..., 'sample_weights': ...}` also gives sample weights, as in tf.estimator);
- the loss is the model's compiled loss (per output, with its loss weights) plus the layers'
  regularization losses; `eval_metric_ops` are the compiled metrics under their Keras names
  (`metric_names_map` renames them); the optimizer is the compiled one, as its tf-keras legacy
  (graph-mode) class with the same configuration, stepping the global step; layer updates (batch
  normalization statistics) run with each step;
- predictions (and the default export output, a PredictOutput) are keyed by the model's output
  names; `export_outputs={output_name: ExportOutput class}` adds outputs of those classes;
- the Estimator starts from the Keras model's current weights: they are saved once to
  `model_dir/keras/keras_model.ckpt` (by the chief) and warm-started from when there is no
  checkpoint of its own;
- `checkpoint_format='checkpoint'` (the default of `tf.keras.estimator`) writes object-based
  checkpoints (keys as `tf.train.Checkpoint` / `model.save_weights` name them, so the Keras model
  can load them); `'saver'` (the default of `tf.compat.v1.keras.estimator`) name-based ones.

Keras 3 models are refused with the tf-keras way to build them.
"""
from __future__ import annotations

import logging
import os
import re

from .. import safe_files

logger = logging.getLogger("npurun")

_V2_DEFAULT_FORMAT = "checkpoint"
_V1_DEFAULT_FORMAT = "saver"
_KERAS3 = ("model_to_estimator takes a tf-keras (Keras 2) model, the Keras tf.estimator was written for; this is "
           "a Keras 3 model ({kind}). Build it with tf-keras: `import tf_keras as keras` (pip install tf-keras), "
           "or set TF_USE_LEGACY_KERAS=1 before TensorFlow is imported so that tf.keras is tf-keras")


def _tf_keras():
    import tf_keras

    return tf_keras


def _is_keras3(model) -> bool:
    return any(cls.__module__.split(".")[0] == "keras" for cls in type(model).__mro__)


def _check_model(model, custom_objects):
    tf_keras = _tf_keras()
    if _is_keras3(model):
        raise ValueError(_KERAS3.format(kind=f"{type(model).__module__}.{type(model).__name__}"))
    if not isinstance(model, tf_keras.Model):
        raise ValueError(f"model_to_estimator: keras_model must be a compiled tf-keras Model (got {model!r})")
    if not getattr(model, "optimizer", None):
        raise ValueError("The given keras model has not been compiled yet. Please compile the model with "
                         "`model.compile()` before calling `model_to_estimator()`.")
    if not (model._is_graph_network or isinstance(model, tf_keras.Sequential)):
        raise ValueError("model_to_estimator: subclassed Keras models are not supported by npurun (the model is "
                         "rebuilt in the Estimator's graph from its layers); use a functional or Sequential model")


# ---- inside the Estimator's graph --------------------------------------------------------------------
def _ordered(value, names, what):
    """`value` (a dict keyed by `names`, a list or tuple in their order, or one tensor) as a list."""
    if isinstance(value, dict):
        missing = [name for name in names if name not in value]
        if missing:
            raise KeyError(f"model_to_estimator: the {what} dict has keys {sorted(value)}; the Keras model's {what} "
                           f"names are {list(names)} (missing {missing})")
        return [value[name] for name in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"model_to_estimator: {len(value)} {what} given; the Keras model has {len(names)} "
                             f"({list(names)})")
        return list(value)
    if len(names) != 1:
        raise ValueError(f"model_to_estimator: one {what} tensor given; the Keras model has {len(names)} "
                         f"({list(names)}): give a dict keyed by these names")
    return [value]


def _as_input(tensor, spec_dtype):
    import tensorflow as tf

    tensor = tf.convert_to_tensor(tensor)
    if spec_dtype is not None and tensor.dtype != spec_dtype and (tensor.dtype.is_floating or tensor.dtype.is_integer) \
            and tf.as_dtype(spec_dtype).is_floating:
        tensor = tf.cast(tensor, spec_dtype)
    return tensor


def _legacy_optimizer(optimizer):
    """A maker of the compiled optimizer as its tf-keras legacy (graph-mode) class with the same settings
    (the settings are read now, eagerly: an optimizer's get_config() reads its variables)."""
    import inspect

    import tensorflow as tf

    tf1_optimizer = getattr(optimizer, "optimizer", optimizer)  # tf-keras wraps one as TFOptimizer at compile()
    if isinstance(tf1_optimizer, tf.compat.v1.train.Optimizer):
        return lambda: _TF1Optimizer(tf1_optimizer)  # graph-mode already: used as is, as tf.estimator did
    tf_keras = _tf_keras()
    legacy = tf_keras.optimizers.legacy
    config = optimizer.get_config()
    if isinstance(optimizer, legacy.Optimizer):
        cls = type(optimizer)
    else:
        cls = getattr(legacy, type(optimizer).__name__, None)
        if cls is None:
            names = ", ".join(n for n in dir(legacy) if not n.startswith("_") and n != "Optimizer")
            raise ValueError(f"model_to_estimator: the model's optimizer {type(optimizer).__name__} has no tf-keras "
                             f"legacy (graph-mode) counterpart; compile with one of tf_keras.optimizers.legacy "
                             f"({names})")
        accepted = set(inspect.signature(cls.__init__).parameters) | {"clipnorm", "clipvalue", "global_clipnorm",
                                                                      "name"}
        ignored = sorted(k for k, v in config.items() if k not in accepted and v not in (None, False)
                         and k not in ("is_legacy_optimizer", "ema_momentum", "jit_compile"))
        if ignored:
            logger.warning("model_to_estimator: optimizer settings %s have no graph-mode equivalent and are not used",
                           ignored)
        config = {k: v for k, v in config.items() if k in accepted and v is not None}
    return lambda: cls.from_config(dict(config))


class _TF1Optimizer:
    """A TensorFlow 1 optimizer (`tf.compat.v1.train.RMSPropOptimizer(...)`) a Keras model was compiled with, with
    the methods model_fn uses of a tf-keras optimizer; its slots live in each Estimator graph (keyed by graph)."""

    def __init__(self, optimizer):
        self.tf1_optimizer = optimizer
        self.iterations = None  # the Estimator's global step, set by model_fn

    def get_gradients(self, loss, variables):
        return [gradient for gradient, _ in self.tf1_optimizer.compute_gradients(loss, var_list=variables)]

    def apply_gradients(self, gradients_and_variables):
        return self.tf1_optimizer.apply_gradients(list(gradients_and_variables), global_step=self.iterations)


def _losses(model, clone, targets, outputs, sample_weights):
    """The compiled loss of `model` for `clone`'s outputs: per output, weighted, plus regularization."""
    import tensorflow as tf
    from tf_keras.src.engine import compile_utils

    weights = getattr(model.compiled_loss, "_user_loss_weights", None)
    container = compile_utils.LossesContainer(model.loss, weights, output_names=clone.output_names)
    total = container(targets if len(targets) > 1 else targets[0], outputs if len(outputs) > 1 else outputs[0],
                      sample_weight=sample_weights, regularization_losses=clone.losses)
    return tf.identity(total, name="loss")


def _metric_ops(model, clone, targets, outputs, sample_weights, metric_names_map):
    import tensorflow as tf
    from tf_keras.src.engine import compile_utils
    from tf_keras.src.metrics import clone_metrics

    compiled = model.compiled_metrics
    user, weighted = getattr(compiled, "_user_metrics", None), getattr(compiled, "_user_weighted_metrics", None)
    if not user and not weighted:
        return {}
    container = compile_utils.MetricsContainer(clone_metrics(user), clone_metrics(weighted),
                                               output_names=clone.output_names)
    y_pred = outputs if len(outputs) > 1 else outputs[0]
    y_true = targets if len(targets) > 1 else targets[0]
    container.build(y_pred, y_true)
    weights = sample_weights if isinstance(sample_weights, (list, tuple)) else [sample_weights] * len(outputs)
    ops = {}
    for y_t, y_p, sw, plain, weighted_objs in zip(targets, outputs, weights, container._metrics,
                                                  container._weighted_metrics):
        y_t, y_p, sw = compile_utils.match_dtype_and_rank(y_t, y_p, sw)
        for metric, weight in [(m, None) for m in plain] + [(m, sw) for m in weighted_objs]:
            if metric is None:
                continue
            update = metric.update_state(y_t, y_p, sample_weight=weight)
            for variable in metric.variables:  # evaluation state: initialised per evaluation, never saved
                for key in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES, tf.compat.v1.GraphKeys.METRIC_VARIABLES):
                    if variable not in tf.compat.v1.get_collection(key):
                        tf.compat.v1.add_to_collection(key, variable)
            ops[metric.name] = (metric.result(), update if update is not None else tf.no_op())
    if metric_names_map:
        unknown = sorted(set(ops) - set(metric_names_map))
        if unknown:
            raise ValueError(f'Invalid `metric_names_map`. The following keras model metric names:"{unknown}" do not '
                             f"exist in the `metric_names_map` dictionary")
        extra = sorted(set(metric_names_map) - set(ops))
        if extra:
            raise ValueError(f"Invalid `metric_names_map`. There are unexpected keys in the `metric_names_map` "
                             f"dictionary. Expected keys: {sorted(ops)}, Received: {extra}")
        ops = {metric_names_map[name]: value for name, value in ops.items()}
    return ops


def _clone(keras_model, custom_objects):
    tf_keras = _tf_keras()
    with tf_keras.utils.custom_object_scope(custom_objects or {}):
        return tf_keras.models.clone_model(keras_model)


def _object_saver(clone, global_step, optimizer):
    """A Saver writing object-based checkpoint keys (tf.train.Checkpoint's) for `clone`, the global step and,
    when training, the optimizer (its hyperparameters and slots, as tf.estimator 2.15's checkpoints hold)."""
    import tensorflow as tf
    from tensorflow.python.checkpoint import checkpoint as checkpoint_lib, graph_view

    clone._track_trackable(global_step, "estimator_global_step")
    if optimizer is not None:
        clone._track_trackable(getattr(optimizer, "tf1_optimizer", optimizer), "optimizer", overwrite=True)
    saveables = graph_view.ObjectGraphView(clone).frozen_saveable_objects()
    saver = tf.compat.v1.train.Saver(var_list=saveables, sharded=True)
    saver._object_restore_saver = checkpoint_lib.frozen_saver(clone)
    return saver


def _make_model_fn(keras_model, custom_objects, object_checkpoints, metric_names_map, export_outputs):
    import tensorflow as tf

    from ..estimator import EstimatorSpec, ModeKeys
    from ..estimator.export import PredictOutput

    input_dtypes = [getattr(t, "dtype", None) for t in keras_model.inputs or ()]
    make_optimizer = _legacy_optimizer(keras_model.optimizer)
    if export_outputs is not None:
        unknown = sorted(set(export_outputs) - set(keras_model.output_names))
        if unknown:
            raise KeyError(f"model_to_estimator: export_outputs keys {unknown} are not output names of the Keras "
                           f"model ({list(keras_model.output_names)})")

    def model_fn(features, labels, mode):
        clone = _clone(keras_model, custom_objects)
        sample_weights = None
        if isinstance(features, dict) and set(features) == {"features", "sample_weights"}:
            features, sample_weights = features["features"], features["sample_weights"]
        inputs = _ordered(features, clone.input_names, "input")
        inputs = [_as_input(t, d) for t, d in zip(inputs, input_dtypes or [None] * len(inputs))]
        outputs = clone(inputs if len(inputs) > 1 else inputs[0], training=mode == ModeKeys.TRAIN)
        # in output_names' order: Keras flattens a model's nested (e.g. dict) outputs so (outputs={'c': .., 'd': ..})
        outputs = tf.nest.flatten(outputs)
        predictions = dict(zip(clone.output_names, outputs))
        loss = train_op = optimizer = None
        metrics = {}
        if mode != ModeKeys.PREDICT:
            targets = [tf.convert_to_tensor(t) for t in _ordered(labels, clone.output_names, "output (label)")]
            if isinstance(sample_weights, dict):
                sample_weights = _ordered(sample_weights, clone.output_names, "sample_weights")
            loss = _losses(keras_model, clone, targets, outputs, sample_weights)
            metrics = _metric_ops(keras_model, clone, targets, outputs, sample_weights, metric_names_map)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        if mode == ModeKeys.TRAIN:
            optimizer = make_optimizer()
            optimizer.iterations = global_step  # each step advances the Estimator's global step
            variables = clone.trainable_weights
            gradients = optimizer.get_gradients(loss, variables)
            apply = optimizer.apply_gradients(zip(gradients, variables))
            train_op = tf.group(apply, *clone.get_updates_for(None), *clone.get_updates_for(inputs))
        scaffold = None
        if object_checkpoints:
            scaffold = tf.compat.v1.train.Scaffold(saver=_object_saver(clone, global_step, optimizer))
        outputs_for_export = {"serving_default": PredictOutput(predictions)}
        for key, output_class in (export_outputs or {}).items():
            outputs_for_export[key] = output_class(predictions[key])
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op,
                             eval_metric_ops=metrics or None, export_outputs=outputs_for_export, scaffold=scaffold)

    return model_fn


def _save_first_checkpoint(keras_model, custom_objects, model_dir, config):
    """The Keras model's current weights as a checkpoint of the clone's variables; returns its path."""
    import tensorflow as tf

    directory = os.path.join(model_dir, "keras")
    latest = tf.train.latest_checkpoint(directory)
    if latest:  # made by an earlier model_to_estimator on this model_dir
        return latest, [name for name, _ in tf.train.list_variables(latest)]
    safe_files.make_dir(directory, "Keras checkpoint folder")  # npurun's name inside model_dir: never a planted link
    values = keras_model.get_weights()
    with tf.Graph().as_default():
        if config.tf_random_seed is not None:
            tf.compat.v1.set_random_seed(config.tf_random_seed)
        clone = _clone(keras_model, custom_objects)
        weights = clone.weights
        saver = tf.compat.v1.train.Saver(var_list={w.name.split(":")[0]: w for w in weights})
        feeds = [tf.compat.v1.placeholder(w.dtype.base_dtype, w.shape) for w in weights]
        assign = tf.group(*[w.assign(feed) for w, feed in zip(weights, feeds)])
        with tf.compat.v1.Session() as sess:
            sess.run(assign, dict(zip(feeds, values)))
            path = saver.save(sess, os.path.join(directory, "keras_model.ckpt"), write_meta_graph=False)
        names = [w.name.split(":")[0] for w in weights]
    return path, names


def _model_to_estimator(keras_model, keras_model_path, custom_objects, model_dir, config, checkpoint_format,
                        metric_names_map, export_outputs):
    from . import Estimator
    from ..estimator.warm_start import WarmStartSettings

    if not (keras_model or keras_model_path):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model and keras_model_path:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, but not both.")
    if checkpoint_format not in (None, "checkpoint", "saver"):
        raise ValueError(f'Checkpoint format must be one of "checkpoint" or "saver". Got {checkpoint_format}')
    if keras_model is None:
        logger.info("Loading models from %s", keras_model_path)
        keras_model = _tf_keras().models.load_model(keras_model_path, custom_objects=custom_objects)
    _check_model(keras_model, custom_objects)
    object_checkpoints = checkpoint_format in (None, "checkpoint")
    model_fn = _make_model_fn(keras_model, custom_objects, object_checkpoints, metric_names_map, export_outputs)
    estimator = Estimator(model_fn, model_dir=model_dir, config=config)
    if estimator.config.is_chief:
        path, names = _save_first_checkpoint(keras_model, custom_objects, estimator.model_dir, estimator.config)
        # Every weight of the model (a regex would take the trainable ones only, losing batch-normalization
        # statistics); set after construction because the model_dir (maybe a temporary one) is known only then.
        estimator._warm_start_from = WarmStartSettings(path, vars_to_warm_start=[re.escape(n) + "$" for n in names])
    return estimator


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None, model_dir=None, config=None,
                       checkpoint_format=_V2_DEFAULT_FORMAT, metric_names_map=None, export_outputs=None):
    """`tf.keras.estimator.model_to_estimator`: an Estimator from a compiled tf-keras model (see the module doc)."""
    return _model_to_estimator(keras_model, keras_model_path, custom_objects, model_dir, config, checkpoint_format,
                               metric_names_map, export_outputs)


def model_to_estimator_v1(keras_model=None, keras_model_path=None, custom_objects=None, model_dir=None, config=None,
                          checkpoint_format=_V1_DEFAULT_FORMAT, metric_names_map=None, export_outputs=None):
    """`tf.compat.v1.keras.estimator.model_to_estimator` (name-based 'saver' checkpoints by default)."""
    return _model_to_estimator(keras_model, keras_model_path, custom_objects, model_dir, config, checkpoint_format,
                               metric_names_map, export_outputs)


# ---- attaching it to tf.keras -------------------------------------------------------------------------
def _loaded(lazy):
    """The module behind one of TensorFlow's `tf.keras` lazy loaders (None when no Keras is installed)."""
    import sys

    try:
        name = lazy.__name__  # loads tf-keras (TF_USE_LEGACY_KERAS=1) or Keras 3
    except Exception:  # noqa: BLE001 - no Keras: nothing to attach to
        return None
    return sys.modules.get(name)


def attach(tf, patches) -> None:
    """`tf.keras.estimator.model_to_estimator` and `tf.compat.v1.keras.estimator.model_to_estimator` where
    TensorFlow's Keras lacks a working one, recorded in `patches` (npurun.names.patching.Patches)."""
    import importlib.machinery
    import sys
    import types

    # Installed on disk, not the stand-in npurun's TF 1 world serves while active (npurun.tf1.world).
    real = importlib.machinery.PathFinder.find_spec("tensorflow_estimator") is not None
    done = []
    for path, function in (("keras", model_to_estimator), ("compat.v1.keras", model_to_estimator_v1)):
        lazy = tf
        for part in path.split("."):
            lazy = getattr(lazy, part, None) if lazy is not None else None
        module = _loaded(lazy) if lazy is not None else None
        if module is None or any(module is seen for seen in done):
            continue  # Keras 3's tf.compat.v1.keras is its tf.keras: one module, tf.keras's function
        done.append(module)
        estimator = vars(module).get("estimator")
        if estimator is None:  # Keras 3: no estimator module; ours refuses its models with the tf-keras way
            namespace = types.ModuleType(f"{module.__name__}.estimator", "Keras estimator API (npurun's).")
            namespace.model_to_estimator = function
            patches.set_all([module], "estimator", namespace)
        elif not real and getattr(estimator, "model_to_estimator", None) is not function:
            patches.set_all([estimator], "model_to_estimator", function)  # tf-keras's needs tensorflow_estimator
    tf_keras_estimator = sys.modules.get("tf_keras.estimator")
    if tf_keras_estimator is not None and not real:
        patches.set_all([tf_keras_estimator], "model_to_estimator", model_to_estimator)
