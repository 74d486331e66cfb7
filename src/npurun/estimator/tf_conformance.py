"""Small behaviours of tf.estimator's Estimator that NPUEstimator keeps, gathered in one place.

  - `config.model_dir` is the estimator's model_dir (given to the Estimator, or created);
  - `RunConfig.device_fn(op)` places the model's ops;
  - a checkpoint variable whose shape differs from the graph's is an error naming the variable
    and both shapes (TensorFlow's resource-variable restore would load it silently);
  - train/evaluate arguments are checked up front with tf.estimator's wording.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1


def config_with_model_dir(config, model_dir):
    """`config` whose model_dir is `model_dir` (warnings were given when `config` was made)."""
    if model_dir is None or config.model_dir == model_dir:
        return config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return config.replace(model_dir=model_dir)


def device_fn_scope(config):
    # device_fn, else the device of a one-device tf.distribute strategy (tf.estimator.RunConfig's
    # train_distribute=OneDeviceStrategy("/gpu:1")) when TensorFlow would place the model elsewhere.
    device_fn = getattr(config, "device_fn", None) or getattr(config, "_strategy_device", None)
    # tf.device takes no functions in TF 2; the graph's own device stack does.
    return _v1.get_default_graph().device(device_fn) if device_fn is not None else contextlib.nullcontext()


class CheckpointShapeError(ValueError, tf.errors.InvalidArgumentError):
    """A checkpoint holds a variable with another shape than the model's.

    Also the InvalidArgumentError tf.estimator raises there, with its first sentence."""

    def __init__(self, message):
        tf.errors.InvalidArgumentError.__init__(self, None, None, message)


def check_restored_shapes(graph, prefix) -> None:
    try:
        shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError):
        return  # the restore itself reported what was wrong
    for variable in graph.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES):
        name = variable.op.name
        graph_shape = variable.shape
        if name in shapes and graph_shape.is_fully_defined() and list(shapes[name]) != graph_shape.as_list():
            raise CheckpointShapeError(
                f"Restoring from checkpoint failed. This is most likely due to a mismatch between the current "
                f"graph and the graph from the checkpoint. Checkpoint {prefix}: variable {name!r} has shape "
                f"{list(shapes[name])} in the checkpoint but "
                f"{graph_shape.as_list()} in the model's graph. Restore it into a model of the same shape, or "
                f"train in a new model_dir")


def check_listeners(listeners, config, hooks) -> None:
    """Listeners are CheckpointSaverListeners, and something saves checkpoints for them to hear."""
    for listener in listeners or ():
        if not isinstance(listener, _v1.train.CheckpointSaverListener):
            raise TypeError(f"saving_listeners must be a list of CheckpointSaverListener, given: {listener!r}")
    saver_hooks = [h for h in hooks or () if isinstance(h, _v1.train.CheckpointSaverHook)]
    if listeners and not (config.save_checkpoints_steps or config.save_checkpoints_secs or saver_hooks):
        raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. Please set one of the "
                         "RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs. (This config saves "
                         "no checkpoints, so the listeners would never be called.)")


def check_not_evaluator(config) -> None:
    """train() in an evaluator task is a mistake tf.estimator refuses. (A ps task's train() serves the
    variables here, as docs/distributed.md says, where tf.estimator refused it too.)"""
    task_type = getattr(config, "task_type", None)
    if task_type == "evaluator":
        raise ValueError(f"Train has been called wrong configuration. Please use tf.estimator.train_and_evaluate "
                         f"which calls proper API according to given configuration. Current configuration: "
                         f"task_type={task_type!r} (an {task_type} task does not train)")


def step_count(value, name):
    """A step count as tf.estimator takes it: an int, or a float (a flag parsed as float), > 0.

    tf.estimator compares the global step (or the number of evaluations) with the count and stops
    at the first step at or past it, so a non-integral float counts as the next integer (`5.5`: 6);
    an infinite count is no limit (None: until the input ends). NaN, which tf.estimator takes and
    then never stops on, is refused here, and so is a bool (a bug, not a count).
    """
    import math
    import numbers

    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or math.isnan(value) \
            or value <= 0:
        raise ValueError(f"Must specify {name} > 0, given: {value!r} (an int or a float step count)")
    if math.isinf(value):
        return None
    return int(math.ceil(value))


def check_steps(steps, max_steps):
    """Estimator.train's argument rules, in tf.estimator's words; returns (steps, max_steps) as ints
    (or None) by `step_count`'s rule."""
    if steps is not None and max_steps is not None:
        raise ValueError(f"Can not provide both steps and max_steps: give steps or max_steps, not both (got "
                         f"steps={steps!r}, max_steps={max_steps!r})")
    return step_count(steps, "steps"), step_count(max_steps, "max_steps")
