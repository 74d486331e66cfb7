"""`import npurun.estimator_api`: `tf.estimator` for a plain `python train.py` on TensorFlow 2.16+.

One line, anywhere before the script first uses `tf.estimator` (before or after `import tensorflow`)::

    import npurun.estimator_api  # noqa: F401  (tf.estimator and tf.keras.estimator, from npurun)
    import tensorflow as tf

    estimator = tf.estimator.Estimator(model_fn, model_dir="/tmp/model")

Importing it imports TensorFlow (quietly, as npurun does: no start-up banner) and adds, only where
TensorFlow lacks them:

- `tf.estimator`, `tf.compat.v1.estimator` and the modules `tensorflow.estimator` /
  `tensorflow.compat.v1.estimator` (`from tensorflow.estimator import RunConfig`): npurun's
  `tf.estimator` (`npurun.tf_estimator`: the Estimator on NPUEstimator, RunConfig, specs, hooks,
  `train_and_evaluate`, `inputs.numpy_input_fn`, export);
- `tf.keras.estimator.model_to_estimator` and `tf.compat.v1.keras.estimator.model_to_estimator`
  (`npurun.tf_estimator.keras`), for tf-keras (Keras 2) models: tf-keras's own needs the
  `tensorflow_estimator` package, which TensorFlow 2.16+ does not have, so it is replaced only when
  that package cannot be imported; Keras 3's `tf.keras` gets an `estimator` module whose
  `model_to_estimator` explains the tf-keras way.

Nothing else changes: TensorFlow stays TensorFlow 2 (eager outside the Estimator), with no TensorFlow 1
API, no Ascend adapter names (`npu_bridge`, `hccl`) and TensorFlow's own `tf.compat.v1.Session` --
that is what `npurun run script.py` adds. `detach()` undoes what the import did.

No environment switch: a variable such as `NPURUN_TF_ESTIMATOR=1` would have to be read at interpreter
start by a `.pth` file in site-packages, which setuptools' editable installs (`pip install -e .`, how
npurun is developed and tested) do not install, so it could not be tested as users would get it.

`tensorflow_estimator` (the package name) is not made: libraries test `import tensorflow_estimator` to
decide that the real package is there (tf-keras's own model_to_estimator does), and a stand-in would
make them take paths that then fail.
"""
from __future__ import annotations

from .logs import import_tensorflow
from .names import patching
from .tf_estimator import estimator_namespace

ESTIMATOR_MODULE_NAMES = ("tensorflow.estimator", "tensorflow.compat.v1.estimator")
_patches = patching.Patches()
_attached = []


def attach() -> None:
    """Add `tf.estimator` and `tf.keras.estimator` where TensorFlow lacks them (see the module doc); idempotent."""
    if _attached:
        return
    tf = import_tensorflow()
    namespace = estimator_namespace()
    objects = [tf, *patching.v1_objects(tf)]
    if not any(patching.has(obj, "estimator") and obj.estimator is not namespace for obj in objects[:2]):
        _patches.set_all(objects, "estimator", namespace)
        for name in ESTIMATOR_MODULE_NAMES:
            _patches.add_module(name, namespace)
    from .tf_estimator import keras as keras_lib

    keras_lib.attach(tf, _patches)
    _attached.append(True)


def detach() -> None:
    """Undo `attach()` (the import's effect)."""
    _patches.undo()
    _attached.clear()


attach()
