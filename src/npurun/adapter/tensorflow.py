"""What Ascend / tf.estimator scripts expect of TensorFlow, attached to TensorFlow 2.21 while active.

`attach(module)` (called when TensorFlow and `tensorflow.compat.v1` are imported under the compat layer)
adds:

- `tf.estimator` and `tf.compat.v1.estimator` (TF 2.16+ has neither), the `npurun.tf_estimator`
  namespace: `Estimator` is NPUEstimator with tf.estimator's signature, `RunConfig` an NPURunConfig
  with tf.estimator's signature and defaults, the specs, `train_and_evaluate`, the session hooks,
  `inputs.numpy_input_fn`;
- `tf.keras.estimator.model_to_estimator` / `tf.compat.v1.keras.estimator.model_to_estimator` for
  tf-keras models (`npurun.tf_estimator.keras`) where tf-keras's own cannot work;
- `tf.compat.v1.layers` (also seen as `tf.layers` after `import tensorflow.compat.v1 as tf`) when
  TensorFlow's own does not work (Keras 3 removed it): `npurun.tf1.layers`;
- `tf.compat.v1.Session` reading an `NpuOptimizer` entry of its ConfigProto (`npurun.adapter.session`);
- `tf.compat.v1.disable_v2_behavior()` / `disable_resource_variables()` that keep resource variables,
  with a warning (loop sinking runs the step in a `tf.while_loop`, which needs them).

Nothing is replaced that works already: on a TensorFlow that still has `tf.estimator`, it stays.
`detach()` restores every attribute it changed.
"""
from __future__ import annotations

import warnings
from importlib import import_module

from ..names import patching
from ..tf_estimator import estimator_namespace

# Every attribute attach() set and module it added (undone by detach()); the generic helpers are
# npurun.names.patching's, shared with npurun.estimator_api.
_patches = patching.Patches()
_raw, _has, _v1_objects = patching.raw, patching.has, patching.v1_objects


def _set_all(objects, attribute, value):
    _patches.set_all(objects, attribute, value)


def _layers_work(v1) -> bool:
    try:
        return callable(v1.layers.dense)
    except Exception:  # Keras 3's lazy loader raises AttributeError (and may raise others)
        return False


_patched: list = []  # the objects attach() has adjusted
ESTIMATOR_MODULE_NAMES = ("tensorflow.estimator", "tensorflow.compat.v1.estimator")


def _shared():
    """The estimator namespace and the Session class, made once and set everywhere."""
    if not _shared.values:
        from tensorflow.python.client import session as tf_session

        from . import session

        try:  # before tf.compat.v1.Session is replaced: npurun.util's NPUSession subclasses TensorFlow's own
            import_module("npurun.util")
        except ImportError:  # not built yet: an NpuOptimizer session then raises AdapterAPIError naming it
            pass

        _shared.values = (estimator_namespace(),
                          session.session_class(tf_session.Session), _resource_variable_guards())
    return _shared.values


KEEP_RESOURCE_VARIABLES = (
    "npurun run keeps resource variables: {name}() would switch tf.compat.v1 variables to ref variables, and "
    "loop sinking (iterations_per_loop, util.set_iteration_per_loop) runs the training step inside a "
    "tf.while_loop, which needs resource variables; everything else {name}() does is done")


def _resource_variable_guards() -> dict:
    """`disable_v2_behavior` / `disable_resource_variables` that keep resource variables, with a warning."""
    import functools

    from tensorflow.python.compat import v2_compat
    from tensorflow.python.ops import resource_variables_toggle

    def warn(name):
        warnings.warn(KEEP_RESOURCE_VARIABLES.format(name=name), UserWarning, stacklevel=3)

    @functools.wraps(v2_compat.disable_v2_behavior)
    def disable_v2_behavior():
        v2_compat.disable_v2_behavior()
        resource_variables_toggle.enable_resource_variables()
        warn("disable_v2_behavior")

    @functools.wraps(resource_variables_toggle.disable_resource_variables)
    def disable_resource_variables():
        warn("disable_resource_variables")

    return {"disable_v2_behavior": disable_v2_behavior, "disable_resource_variables": disable_resource_variables}


_shared.values = ()


def attach(module) -> None:
    """Add what TensorFlow lacks (see the module docstring) to `module` and the objects it reaches.

    Called with `tensorflow` when it is imported, and with `tensorflow.compat.v1` when that is
    imported (`import tensorflow.compat.v1 as tf` builds a module wrapper of its own); idempotent.
    """
    import tensorflow as tf

    from ..tf1 import layers

    estimator, session_class, guards = _shared()
    objects = [tf, *_v1_objects(tf)] if module.__name__ == "tensorflow" else [module, _raw(module)]
    objects = [obj for obj in objects if all(obj is not done for done in _patched)]
    if not objects:
        return
    _patched.extend(objects)
    v1_objects = [obj for obj in objects if obj is not tf]
    if v1_objects:
        v1 = v1_objects[0]
        if not any(_has(obj, "estimator") and obj.estimator is not estimator for obj in (tf, v1)):
            _set_all(objects, "estimator", estimator)
            for name in ESTIMATOR_MODULE_NAMES:  # `from tensorflow.estimator import RunConfig`
                _patches.add_module(name, estimator)
            if module.__name__ == "tensorflow":  # tf.keras.estimator.model_to_estimator (tf-keras's needs
                from ..tf_estimator import keras as keras_lib  # the tensorflow_estimator package)

                keras_lib.attach(tf, _patches)
        if not _layers_work(v1):
            _set_all(v1_objects, "layers", layers)
        _set_all(v1_objects, "Session", session_class)
        for name, guard in guards.items():
            _set_all(v1_objects, name, guard)


def detach() -> None:
    """Restore every attribute attach() changed."""
    _patched.clear()
    _patches.undo()
