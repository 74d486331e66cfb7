"""The TensorFlow 1 world of scripts: `import tensorflow as tf` in a script gives TensorFlow 1's API.

Ascend ModelZoo scripts are TensorFlow 1.15 code (`tf.flags`, `tf.Session`, `tf.placeholder`,
`tf.contrib`, ...) written as `import tensorflow as tf`. While the compat layer is active:

- `import tensorflow` / `from tensorflow import ...` in a *script* module (one whose file is not in
  site-packages, the standard library or npurun) gives `TF1Module`: `tf.compat.v1` (with what
  `tf_estimator.attach` adds: `tf.estimator`, the NpuOptimizer `Session`, TF 1 `layers`) plus
  `tf.contrib` (`npurun.tf1.contrib`). npurun and third-party libraries keep TensorFlow 2, except the TF 1
  libraries listed below.
  The importer is told apart by the globals the import statement passes to `__import__`, so a
  script's own local modules (model.py next to train.py) are scripts too.
- `tensorflow.contrib...` and `tensorflow.examples.tutorials.mnist.input_data` are importable, and
  `tensorflow.python.framework.graph_util.convert_variables_to_constants`, `ops.Tensor`, `ops.IndexedSlices`,
  `tensorflow.python.ops.array_ops.stack` / `unstack`, `tensorflow.python.training.gen_training_ops` and the other TF 1.15 private names ModelZoo
  scripts use that moved (`nest.is_sequence`, `control_flow_ops.cond`, ...: `_moved_names`) exist again
  at their TF 1 paths; a `tensorflow.python...` module that is gone is a ModuleNotFoundError saying so;
  `tfdeterminism.patch()` is TensorFlow's own op determinism (npurun.tf1.tfdeterminism);
- third-party TensorFlow 1 libraries (tensorlayer < 2, tflearn, tensorpack, sonnet < 2: `_TF1_LIBRARIES`) get
  TensorFlow 1 as the script does;
- `tensorflow.python.estimator[.estimator|.run_config|.model_fn|.training]` are the script's tf.estimator,
  `tensorflow.python.estimator.canned.*` / `.head.*` npurun.tf_estimator's premade estimators and heads, and
  the same paths below `tensorflow_estimator.python.estimator` when no real tensorflow_estimator is installed;
- `from tensorflow.python.keras[.x] import y` gives tf-keras's module (`tf_keras.src[.x]`), the Keras
  the script's `tf.keras` is (TensorFlow 2.21's own copy there has its own session); so does a script's
  standalone `import keras` / `from keras.x import y` (Keras 2 on TensorFlow, as with TF 1.15; not Keras 3).
  These two also hold for scripts of the adapter's TF 2 package `npu_device` (`scripts_get_keras2`: TF 2.x's
  Keras was Keras 2), which keep TensorFlow 2 otherwise; their `from tensorflow.keras[.x] import y` is
  their `tf.keras`'s namespace, and so is `import tensorflow.keras.backend as K`; their optimizers take
  Keras 2.x's `lr=` for learning_rate again, and a Keras 2 library's `keras.src.engine` (tensorflow-addons)
  is tf-keras's.
- NumPy's removed aliases of Python types (`np.float`, `np.int`, `np.bool`, ...) are the builtins again,
  as in the NumPy of TensorFlow 1.15 and of the TF 2.4-era npu_device scripts (NumPy 1.19), and NumPy 2.3's
  removed `ndarray.tostring()` is `tobytes()` and NumPy 2's removed binary mode of `np.fromstring` is back;
  absl flags take a str `enum_values` as absl-py 0.x did (both script kinds); `time.clock` (Python 3.7's,
  removed in 3.8) is `time.process_time`, `inspect.getargspec` (removed in 3.11) is back and so are
  `collections.Iterable`, `collections.Sequence`, ... (3.7's aliases of `collections.abc`, removed in 3.10)
  (TF 1 scripts).
- With `graph_mode` (as `npurun run` does), TensorFlow 1's global behaviour (graph mode, TF 1 tensor
  shapes and tensor equality, v1 control flow) is switched on when a script first imports
  TensorFlow. Resource variables are kept: loop sinking runs the step in a `tf.while_loop`.
  TensorFlow cannot switch back to eager execution afterwards, so graph mode stays for the process.
"""
from __future__ import annotations

import builtins
import functools
import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys
import sysconfig
import types
import warnings

from . import contrib
from ..logs import TENSORFLOW_LINES_ONCE

_ESTIMATOR_MODULES = ("estimator", "run_config", "model_fn", "training")
_EXTRA_MODULES = {
    "tensorflow.examples": None, "tensorflow.examples.tutorials": None, "tensorflow.examples.tutorials.mnist": None,
    "tensorflow.examples.tutorials.mnist.input_data": "npurun.tf1.mnist_input_data",
    "tensorflow.python.data.experimental.ops.threadpool": "npurun.tf1.data_threadpool",
    # TF 1.15 private modules that moved (issue 23: counted over ModelZoo-TensorFlow's model folders)
    "tensorflow.python.eager.profiler": "npurun.tf1.eager_profiler",  # official-models' keras_utils
    "tensorflow.python.distribute.distribution_strategy_context": "tensorflow.python.distribute.distribute_lib",
    "tensorflow.python.training.distribution_strategy_context": "tensorflow.python.distribute.distribute_lib",
    # TF <= 2.x's training_ops.py re-exported the generated training ops (official models' LARS / SGD optimizers
    # vendored into ResNet50_ID0360: `training_ops.resource_apply_keras_momentum`); TensorFlow 2.21 has only these
    "tensorflow.python.training.training_ops": "tensorflow.python.ops.gen_training_ops",
    "tensorflow.python.tpu.tpu_config": "npurun.tf1.contrib.tpu",  # RunConfig, TPUConfig, InputPipelineConfig
    # TF <= 2.10's tracking package, now tensorflow.python.trackable (official models' `tracking.AutoTrackable`,
    # Deep_Speech's and NMT's vendored copies: 5 folders)
    "tensorflow.python.training.tracking": ("package", "tensorflow.python.trackable"),
    "tensorflow.python.training.tracking.tracking": "tensorflow.python.trackable.autotrackable",
    "tensorflow.python.training.tracking.base": "tensorflow.python.trackable.base",
    "tensorflow.python.training.tracking.data_structures": "tensorflow.python.trackable.data_structures",
    # tensorflow-determinism (refuses TensorFlow 2.21): its patch() is TensorFlow's own op determinism
    "tfdeterminism": "npurun.tf1.tfdeterminism",
    # TF 1.15's Graph Transform Tool wrapper (13 folders import it for an export step): importable, calling it raises
    "tensorflow.tools.graph_transforms": "npurun.tf1.graph_transforms",
    # TF 1's estimator at its implementation path (`from tensorflow.python.estimator import estimator`):
    # each module is the script's tf.estimator, which holds the names scripts take from them.
    "tensorflow.python.estimator": lambda: _estimator_package("tensorflow.python.estimator"),
    **{f"tensorflow.python.estimator.{sub}": lambda: _script_estimator() for sub in _ESTIMATOR_MODULES},
}
# tf.estimator's premade estimators and heads at their implementation paths, TF 1's
# (`tensorflow.python.estimator.canned.dnn`) and tensorflow_estimator's
# (`tensorflow_estimator.python.estimator.head.binary_class_head`): npurun.tf_estimator.canned / .head.
_CANNED_MODULES = ("dnn", "linear", "dnn_linear_combined", "baseline", "boosted_trees", "head", "optimizers",
                   "metric_keys", "prediction_keys", "parsing_utils")
_HEAD_MODULES = {"base_head": "base", "binary_class_head": "classification", "multi_class_head": "classification",
                 "multi_label_head": "classification", "regression_head": "regression", "multi_head": "multi",
                 "head_utils": "head_utils"}
_TF_ESTIMATOR_PACKAGE = "tensorflow_estimator"  # given only when no real tensorflow_estimator is installed
for _root in ("tensorflow.python.estimator", "tensorflow_estimator.python.estimator"):
    _EXTRA_MODULES[f"{_root}.canned"] = ("package", "npurun.tf_estimator.canned")
    _EXTRA_MODULES[f"{_root}.head"] = ("package", "npurun.tf_estimator.head")
    _EXTRA_MODULES.update({f"{_root}.canned.{sub}": f"npurun.tf_estimator.canned.{sub}" for sub in _CANNED_MODULES})
    _EXTRA_MODULES.update({f"{_root}.head.{sub}": f"npurun.tf_estimator.head.{target}"
                           for sub, target in _HEAD_MODULES.items()})
_EXTRA_MODULES.update({
    "tensorflow_estimator": lambda: _tensorflow_estimator_package(),
    "tensorflow_estimator.python": None,
    "tensorflow_estimator.python.estimator": lambda: _estimator_package("tensorflow_estimator.python.estimator"),
    **{f"tensorflow_estimator.python.estimator.{sub}": lambda: _script_estimator() for sub in _ESTIMATOR_MODULES},
})
_IMPLEMENTATION_PACKAGES = ("python", "core", "contrib", "examples", "tools", "lite", "compiler", "_api", "include",
                            "dtensor", "tsl", "xla_aot_runtime_src")
_LAYERS_DEPRECATED = r"`tf\.layers\.\w+` is deprecated"
# tf-keras's optimizers warn that `lr` is deprecated: in a TF 1 script's Keras it is the argument's name
_KERAS_LR_DEPRECATED = r"The `lr` argument is deprecated"
# tf-keras's UserWarnings that TensorFlow 1.15's Keras never gave, about tf-keras's own code or TF 2's formats:
# its graph-mode fit reads `Model.state_updates` itself (every Keras fit on a session), and `model.save("x.h5")`,
# TF 1.15's way to save a model (squeezenet's train_npu.py), is "legacy" to it.
_KERAS_NOISE = (r"`Model\.state_updates` will be removed in a future version",
                r"You are saving your model as an HDF5 file via `model\.save\(\)`",
                # TF 1.15's way to build a Keras-derived model for train or eval (EfficientNet's model_fn and
                # the 20 folders that call it), deprecated only in TF 2.4's Keras
                r"`tf\.keras\.backend\.(set_learning_phase|learning_phase_scope)` is deprecated")
# tf_slim's layers (tf.contrib.slim / tf.contrib.layers: conv2d, fully_connected, max_pool2d, ...) call the
# deprecated `layer.apply`; TensorFlow's Keras warns from its own file at the first call. TF 1.15 logged that as a
# deprecation notice located in contrib's layers.py, library code, which _LibraryDeprecations drops likewise.
_LAYER_APPLY_DEPRECATED = r"`layer\.apply` is deprecated"
# collections.abc's classes that Python 3.7's `collections` still gave at their old names (its __getattr__ read
# _collections_abc.__all__ of 3.7; Buffer, 3.12's, was never there)
_PY37_COLLECTIONS_ABCS = ("Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator", "AsyncGenerator", "Hashable",
                          "Iterable", "Iterator", "Generator", "Reversible", "Sized", "Container", "Callable",
                          "Collection", "Set", "MutableSet", "Mapping", "MutableMapping", "MappingView", "KeysView",
                          "ItemsView", "ValuesView", "Sequence", "MutableSequence", "ByteString")
_NUMPY_ALIASES = {"float": float, "int": int, "bool": bool, "object": object, "str": str, "complex": complex,
                  "long": int, "unicode": str}
# NumPy 2.0's removed aliases (its __expired_attributes__) that TF 1.15's NumPy had, each the name NumPy points to
# instead: `np.NaN` (8 ModelZoo folders: DeepLab's eval), `np.Inf` (10), `np.product` (5), `np.infty`, ...
_NUMPY2_REMOVED = {"NaN": "nan", "Inf": "inf", "Infinity": "inf", "PINF": "inf", "infty": "inf", "float_": "float64",
                   "complex_": "complex128", "cfloat": "complex128", "singlecomplex": "complex64",
                   "longfloat": "longdouble", "clongfloat": "clongdouble", "longcomplex": "clongdouble",
                   "string_": "bytes_", "unicode_": "str_", "round_": "round", "product": "prod",
                   "cumproduct": "cumprod", "alltrue": "all", "sometrue": "any", "mat": "asmatrix",
                   # NumPy 1.24 / 2.x removals of other names TF 1.15's NumPy had: the scalar-type aliases
                   # (`np.bool8`, `np.int0`: 2 folders each) and `np.trapz` (NumPy 2.4: np.trapezoid)
                   "bool8": "bool_", "int0": "intp", "uint0": "uintp", "object0": "object_", "str0": "str_",
                   "bytes0": "bytes_", "void0": "void", "trapz": "trapezoid"}
_NUMPY2_REMOVED_VALUES = {"NINF": float("-inf"), "PZERO": 0.0, "NZERO": -0.0}
# NumPy 2.3's removed methods that TF 1.15's NumPy had, each the method NumPy points to instead, on arrays and
# NumPy scalars alike: `x.tostring()` (24 ModelZoo folders: TFRecord writers' `image.tostring()`, UGATIT's
# `np.array(cv2.imencode('.jpg', images)[1]).tostring()`) is `x.tobytes()`.
_NUMPY_REMOVED_METHODS = {"tostring": "tobytes"}


def _set_type_attribute(cls, name, value) -> bool:
    """Set `name` on a C extension type that `setattr` refuses ("cannot set 'tostring' attribute of immutable
    type 'numpy.ndarray'"), or remove it when `value` is None: in the dict behind the type's read-only
    `__dict__`, then `PyType_Modified` so CPython's attribute caches (the type's and its subclasses') see the
    change. False (nothing changed) where that dict cannot be reached."""
    import ctypes
    import gc

    namespaces = [referent for referent in gc.get_referents(cls.__dict__) if isinstance(referent, dict)]
    if len(namespaces) != 1:
        return False
    if value is None:
        namespaces[0].pop(name, None)
    else:
        namespaces[0][name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
    return True


class _NumpyCast:
    """NumPy 1's `np.cast`, removed in NumPy 2.0: `np.cast[np.float32](x)` is `x` as an array of that type (the
    key anything `np.dtype` takes: a scalar type, 'float32', 'int', float). PixelCNN++ scales its feeds with it
    (3 ModelZoo folders: PixelCNN++, RealNVP, PixelLink's util.dtype)."""

    def __getitem__(self, key):
        import numpy

        scalar_type = numpy.dtype(key).type
        return lambda x: numpy.asarray(x).astype(scalar_type)

    def __repr__(self):
        return "<np.cast of NumPy 1, as npurun run gives it>"


def _numpy_asfarray(a, dtype=float):
    """NumPy 1's `np.asfarray`, removed in NumPy 2.0: `a` as an array of a floating type (float64 unless `dtype`
    is inexact; MLSP's kutils)."""
    import numpy

    if not numpy.issubdtype(dtype, numpy.inexact):
        dtype = numpy.float64
    return numpy.asarray(a, dtype=dtype)


def _numpy_asscalar(a):
    """NumPy 1's `np.asscalar(a)` (removed in 1.23): `a.item()`, the Python scalar (6 ModelZoo folders)."""
    return a.item()


def _numpy_in1d(ar1, ar2, assume_unique=False, invert=False, **kwargs):
    """NumPy 1's `np.in1d` (removed in NumPy 2.4): `np.isin` over `ar1` flattened (3 ModelZoo folders)."""
    import numpy

    return numpy.isin(numpy.ravel(ar1), ar2, assume_unique=assume_unique, invert=invert, **kwargs)


def _numpy_loads(data, *args, **kwargs):
    """NumPy 1's `np.loads` (removed in 1.17): `pickle.loads`."""
    import pickle

    return pickle.loads(data, *args, **kwargs)


# NumPy's removed functions that TF 1.15's NumPy had and that have no same-named replacement, as NumPy 1 had them
_NUMPY2_REMOVED_FUNCTIONS = {"cast": _NumpyCast(), "asfarray": _numpy_asfarray, "asscalar": _numpy_asscalar,
                             "in1d": _numpy_in1d, "loads": _numpy_loads}


def numpy_names_provided() -> frozenset:
    """The NumPy names a TF 1 script gets under `npurun run` although the installed NumPy has none."""
    return (frozenset(_NUMPY_ALIASES) | frozenset(_NUMPY2_REMOVED) | frozenset(_NUMPY2_REMOVED_VALUES)
            | frozenset(_NUMPY2_REMOVED_FUNCTIONS))
_NPURUN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TF1Module(types.ModuleType):
    """`tensorflow` as a TensorFlow 1 script sees it: `tf.compat.v1` plus `tf.contrib`."""

    def __init__(self, tf):
        super().__init__("tensorflow", "TensorFlow 1's API (tf.compat.v1) as npurun run gives it to scripts.")
        self.__dict__["_v1"] = tf.compat.v1
        # tf.compat.v1.compat.v1 is another module object than tf.compat.v1 (which attach() adjusts).
        self.__dict__["compat"] = tf.compat

    def __getattr__(self, name):
        if name == "contrib":
            return importlib.import_module("tensorflow.contrib")
        if name == "python":
            return _script_tf_python()
        try:
            return getattr(self._v1, name)
        except AttributeError:
            if name.startswith("__"):
                raise
            raise AttributeError(f"module 'tensorflow' has no attribute {name!r}: under npurun run a script's "
                                 f"tensorflow is TensorFlow 1's API as TensorFlow {self._v1.VERSION} keeps it "
                                 f"(tf.compat.v1), which has no {name!r}") from None

    def __dir__(self):
        return sorted(set(dir(self._v1)) | {"contrib"})


@functools.lru_cache(maxsize=None)
def _library_dirs() -> tuple:
    # cached: is_script runs on every import statement a script executes, and pickle.dump calls __import__
    # for each global it saves (BISIMULATION_ID2029's statistics.pkl of millions of NumPy floats spent minutes
    # in sysconfig.get_paths and realpath here)
    paths = {_NPURUN_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            paths.add(sysconfig.get_paths()[key])
        except KeyError:
            pass
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


# Third-party libraries written for TensorFlow 1 (12 ModelZoo folders use one): they get TensorFlow 1 as the
# script does, else `tf.GraphKeys` & co. fail inside them. Package -> (distribution, first major version that
# is TensorFlow 2 code, None if none is).
_TF1_LIBRARIES = {
    "tensorlayer": ("tensorlayer", 2),
    "tflearn": ("tflearn", None),
    "tensorpack": ("tensorpack", None),
    "sonnet": ("dm-sonnet", 2),
}
_tf1_library_cache: dict = {}


def _is_tf1_library(name: str) -> bool:
    """Whether module `name` belongs to an installed TensorFlow 1 library of _TF1_LIBRARIES."""
    package = name.partition(".")[0]
    if package not in _TF1_LIBRARIES:
        return False
    if package not in _tf1_library_cache:
        from importlib import metadata

        distribution, tf2_major = _TF1_LIBRARIES[package]
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            version = "0"  # a local copy of the library (vendored in the folder) is TF 1 code
        major = version.split(".")[0]
        _tf1_library_cache[package] = tf2_major is None or not major.isdigit() or int(major) < tf2_major
    return _tf1_library_cache[package]


def is_script(globals_) -> bool:
    """Whether an import with these module globals comes from a script (gets TensorFlow 1): the script, its
    local modules, and the TensorFlow 1 libraries of _TF1_LIBRARIES."""
    if not globals_:
        return False
    name = globals_.get("__name__") or ""
    if name == "npurun" or name.startswith("npurun."):
        return False
    if _is_tf1_library(name):
        return True
    path = globals_.get("__file__")
    if not path:
        return name == "__main__"
    return _is_script_file(path)


@functools.lru_cache(maxsize=4096)
def _is_script_file(path: str) -> bool:
    path = os.path.realpath(path)
    if os.sep + "site-packages" + os.sep in path or os.sep + "dist-packages" + os.sep in path:
        return False
    return not path.startswith(_library_dirs())


class _LibraryDeprecations(logging.Filter):
    """Drops TensorFlow's "From FILE:LINE: X is deprecated" notices whose FILE is library code (tf-keras,
    TensorFlow, npurun): a call the user cannot change. A notice at a line of the script's own is kept,
    as TF 1.15 printed it."""

    def filter(self, record):
        message = record.msg if isinstance(record.msg, str) else ""
        if not (message.startswith("From %s:") and "deprecated" in message and record.args):
            return True
        location = str(record.args[0]).rpartition(":")[0]
        return not location or _is_script_file(location)


_LIBRARY_DEPRECATIONS = _LibraryDeprecations()

# TensorFlow 2's notices about what was current in TensorFlow 1.15 (logged, on the "absl" or "tensorflow" logger, at
# each use): in a TF 1 script the old way is the right one.
#  - `tf.data.Options().experimental_threading` (25 ModelZoo folders: official models' input pipelines) is
#    `threading` in TF 2;
#  - `compat.forward_compatibility_horizon(2019, 5, 1)` around each `tf.layers.batch_normalization` (FusedBatchNorm
#    rather than V3, which the NPU then lacked; 20 folders, GFLmser's every block): TensorFlow 1.15 took the past
#    date silently, TensorFlow 2.21 warns at every entry (106 lines in GFLmser); the ops run the same on CPU.
_TF1_CURRENT_NAMES = ("options.experimental_threading is deprecated",
                      "Trying to set the forward compatibility date to the past")


class _Tf1CurrentNames(logging.Filter):
    """Drops TensorFlow 2's notices about a TensorFlow 1.15 name or date (TF1 world only)."""

    def filter(self, record):
        message = record.msg if isinstance(record.msg, str) else ""
        return not message.startswith(_TF1_CURRENT_NAMES)


_TF1_CURRENT_NAMES_FILTER = _Tf1CurrentNames()


def _tf1_current_names_loggers():
    """The loggers those notices come on: absl's (imported first, so that "absl" is absl's own logger class,
    not a plain one made here) and TensorFlow's."""
    loggers = [logging.getLogger("tensorflow")]
    try:
        from absl import logging as absl_logging
    except ImportError:  # absl comes with TensorFlow; without it nothing logs on "absl"
        return loggers
    return loggers + [absl_logging.get_absl_logger()]



class _AliasLoader(importlib.abc.Loader):
    """Makes an import of one name give another module (`sys.modules` is read back after exec_module)."""

    def __init__(self, make):
        self._make = make

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        sys.modules[module.__name__] = self._make(module.__name__)


class TF1Finder(importlib.abc.MetaPathFinder):
    """`tensorflow.contrib...` and `tensorflow.examples.tutorials.mnist...` while the TF1 world is on; a
    `tensorflow.python...` module TensorFlow no longer has is a ModuleNotFoundError saying so."""

    keras2_libraries = False  # TF 2 (npu_device) scripts: Keras 2 libraries' `keras.src.engine` is tf-keras's

    def find_spec(self, fullname, path=None, target=None):
        if self.keras2_libraries and fullname.startswith("keras.src.") and path is not None:
            spec = _keras2_library_spec(fullname, path)
            if spec is not None:
                return spec
        spec = self._find_spec(fullname, path)
        if (spec is None and fullname.startswith("tensorflow.python.") and path is not None
                and not fullname.startswith(_TF_PYTHON_KERAS + ".")
                and importlib.machinery.PathFinder.find_spec(fullname, path) is None):
            version = getattr(sys.modules.get("tensorflow"), "__version__", "2")  # maybe mid-import
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: a private module of TensorFlow 1.15 that TensorFlow {version} "
                f"no longer has (moved or removed), and npurun does not provide it. Import the public name "
                f"(tf.compat.v1....) instead", name=fullname)
        return spec

    def _find_spec(self, fullname, path):
        if fullname == "tensorflow.contrib" or fullname.startswith("tensorflow.contrib."):
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(contrib.module_for), is_package=True)
        if fullname in _EXTRA_MODULES:
            if fullname.startswith(_TF_ESTIMATOR_PACKAGE) and _real_tensorflow_estimator():
                return None
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(_extra_module), is_package=True)
        if fullname == "tensorflow_core" or fullname.startswith("tensorflow_core."):
            # TF 1.15 / 2.0 installed TensorFlow's code as `tensorflow_core`; some scripts import that name.
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(
                lambda name: importlib.import_module("tensorflow" + name[len("tensorflow_core"):])), is_package=True)
        return None


_TF_PYTHON_KERAS = "tensorflow.python.keras"


def _keras2_library_spec(fullname, path):
    """`from keras.src.engine import keras_tensor` in a Keras 2.13-2.15 library (tensorflow-addons, imported by 9
    TensorFlow2 ModelZoo folders): a `keras.src` module Keras 3 does not have is tf-keras's of that name, the Keras
    an npu_device script's tf.keras is. None when Keras 3 has the module or tf-keras has no such module."""
    import importlib.util

    if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
        return None
    target = "tf_keras" + fullname[len("keras"):]
    try:
        if importlib.util.find_spec(target) is None:
            return None
    except ImportError:
        return None
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(
        lambda name: importlib.import_module("tf_keras" + name[len("keras"):])), is_package=True)


def _legacy_keras_module(name):
    """`from tensorflow.python.keras[.x] import y` in a script: tf-keras's module (`tf_keras.src[.x]`).

    TF 1's `tensorflow.python.keras` was the Keras that `tf.keras` is; here `tf.keras` is tf-keras, while
    TensorFlow 2.21's own `tensorflow.python.keras` is a separate, partial copy with its own session and
    graph state: `K.set_session(sess)` on it would not reach the models the script builds with tf.keras.
    None where tf-keras has no such module (the import then goes to TensorFlow as written).
    """
    target = "tf_keras.src" + name[len(_TF_PYTHON_KERAS):]
    try:
        return importlib.import_module(target)
    except ImportError:
        return None


def _script_tf_python():
    """`tensorflow.python` as `import tensorflow.python.keras as keras` reaches it from a TF 1 script's `tensorflow`.

    Python binds that import by reading `python`, then `keras` off the module `import tensorflow` gives the
    script (TF1Module). TF 1's `tensorflow.python.keras` was `tf.keras`; so that form gives tf-keras's module too,
    as `from tensorflow.python.keras import x` does (`_legacy_keras_module`); the rest is TensorFlow's own.
    (Densenet_3D's `keras.utils.to_categorical`: TensorFlow 2.21's partial copy has no such name.)
    """
    real = importlib.import_module("tensorflow.python")
    if _script_tf_python.module is None:
        module = types.ModuleType("tensorflow.python", "tensorflow.python, with tf-keras as its `keras`")
        module.__path__ = list(getattr(real, "__path__", []))

        def attribute(name):
            if name == "keras":
                keras = _legacy_keras_module(_TF_PYTHON_KERAS)
                if keras is not None:
                    return keras
            return getattr(importlib.import_module("tensorflow.python"), name)

        module.__getattr__ = attribute
        _script_tf_python.module = module
    return _script_tf_python.module


_script_tf_python.module = None


def _tf2_keras_namespace(name):
    """`from tensorflow.keras[.x] import y` in an npu_device (TF 2) script: the namespace of the script's
    `tf.keras` (tf-keras under npurun run). TensorFlow maps the `tensorflow.keras` module path when it is first
    imported, which npurun's command does before the script's environment (TF_USE_LEGACY_KERAS=1) is set, so
    the path would give Keras 3 while `tf.keras` gives tf-keras. None where `tf.keras` has no such module."""
    import tensorflow as tf

    value = tf.keras
    for part in name.split(".")[2:]:
        value = getattr(value, part, None)
        if not isinstance(value, types.ModuleType):
            return None
    return value


# Keras 2.x modules tf-keras (Keras 2.15+) keeps elsewhere, most specific first: Keras <= 2.10's
# `keras.optimizer_v2` (TF 2.x-era scripts subclass `optimizer_v2.OptimizerV2`: 9 TensorFlow2 ModelZoo files) is
# its `optimizers.legacy`, except the package's helper modules, which tf-keras moved beside it (official models'
# vendored tf2_common `optimizer_v2modified.py`: `from keras.optimizer_v2 import utils`, 2 TensorFlow2 folders).
_KERAS_2_MOVES = (("keras.optimizer_v2.utils", "tf_keras.src.optimizers.utils"),
                  ("keras.optimizer_v2.learning_rate_schedule", "tf_keras.src.optimizers.schedules.learning_rate_schedule"),
                  ("keras.optimizer_v2.legacy_learning_rate_decay", "tf_keras.src.optimizers.legacy_learning_rate_decay"),
                  ("keras.optimizer_v2", "tf_keras.src.optimizers.legacy"))


def _keras2_target(name):
    """tf-keras's module for the Keras 2.x module `name` (`keras[.x]`)."""
    for old, new in _KERAS_2_MOVES:
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return "tf_keras.src" + name[len("keras"):]


def _with_moved_submodules(name, module, fromlist):
    """`module` for `from NAME import a, b`, where some of a, b are Keras 2.x submodules tf-keras keeps elsewhere
    (`from keras.optimizer_v2 import utils`): then a module named NAME giving those and `module`'s names."""
    moved = {item: importlib.import_module(_keras2_target(f"{name}.{item}")) for item in fromlist or ()
             if item != "*" and _keras2_target(f"{name}.{item}") != f"{module.__name__}.{item}"}
    if not moved:
        return module
    view = types.ModuleType(name, f"{module.__name__}, with the Keras 2.x submodules tf-keras keeps elsewhere")
    view.__dict__.update(moved)
    view.__getattr__ = lambda attribute: getattr(module, attribute)
    return view


def _keras2_layers_module(name, layers_package, module, fromlist):
    """`from keras.layers.merge import add` / `from keras.layers.normalization import BatchNormalization`: Keras
    2.x's layer modules (`merge`, `advanced_activations`, `normalization`, ... one level below `keras.layers`)
    held layers that tf-keras keeps in other files (`layers.merging`, `layers.activation`, ...) or not in the
    module of that name. Such a module is then a view of tf-keras's public `tf_keras.layers` (every layer and
    the merge functions), with `module`'s own names first when tf-keras has one of that name. None when `name`
    is not such a module or `module` gives every name asked for."""
    parent, _, short = name.rpartition(".")
    if parent != layers_package or not short or not fromlist:
        return None
    if module is not None and all(item == "*" or hasattr(module, item) for item in fromlist):
        return None
    public = importlib.import_module("tf_keras.layers")
    if any(item != "*" and not hasattr(public, item) and not hasattr(module, item) for item in fromlist):
        return None  # a name tf-keras has nowhere: the import fails as written
    view = types.ModuleType(name, f"Keras 2.x's {name}: tf_keras.layers' layers")
    view.__dict__.update({key: value for key, value in vars(public).items() if not key.startswith("_")})
    if module is not None:
        view.__dict__.update({key: value for key, value in vars(module).items() if not key.startswith("_")})
    return view


def _standalone_keras(name, fromlist):
    """`import keras` / `from keras.layers import Dense` in a TF 1 script: tf-keras's module (`tf_keras.src[.x]`).

    TensorFlow 1.15 scripts' standalone `keras` was Keras 2 on the TensorFlow backend (56 ModelZoo folders);
    Keras 3 (today's `keras`) has no graph mode or sessions. tf-keras is Keras 2, the Keras the script's
    `tf.keras` is, sharing its session (`K.set_session`). A module tf-keras lacks (`keras.engine.topology`)
    is a ModuleNotFoundError naming it."""
    target = _keras2_target(name)
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as missing:
        layers = _keras2_layers_module(name, "keras.layers", None, fromlist)
        if layers is not None:
            return layers
        # Keras 2.x's public modules tf-keras keeps only in its API tree (`keras.applications.resnet50`, whose
        # code is tf-keras's `src.applications.resnet`): the API module of the same name.
        public = "tf_keras" + name[len("keras"):]
        try:
            module = importlib.import_module(public) if name.startswith("keras.") else None
        except ModuleNotFoundError:
            module = None
        if module is not None:
            return module if fromlist else importlib.import_module("tf_keras.src")
        raise ModuleNotFoundError(
            f"No module named {name!r}: under npurun run a TensorFlow 1 or npu_device script's `keras` is tf-keras "
            f"(Keras 2, as with TensorFlow 1.15 / 2.x), which has no {target!r}", name=name) from missing
    for item in fromlist or ():
        if item != "*" and not hasattr(module, item):
            try:
                importlib.import_module(f"{target}.{item}")
            except ImportError:
                pass  # a name, not a submodule: `from keras.layers import Dense` reads it from the module
    layers = _keras2_layers_module(name, "keras.layers", module, fromlist)
    if layers is not None:
        return layers
    return _with_moved_submodules(name, module, fromlist) if fromlist else importlib.import_module("tf_keras.src")


def _script_estimator():
    import tensorflow as tf

    return tf.compat.v1.estimator  # attached by npurun.compat while active (TF 2.16+ has none of its own)


def _load_global_step_from_checkpoint_dir(checkpoint_dir):
    """TF 1.15 estimator.py's private helper, which EfficientNet's TPU-derived main.py / main_npu.py call
    (`estimator._load_global_step_from_checkpoint_dir(FLAGS.model_dir)`: 9 ModelZoo files): the global step
    of the latest checkpoint in the folder, 0 when there is none."""
    import tensorflow as tf

    try:
        return int(tf.train.load_checkpoint(checkpoint_dir).get_tensor(tf.compat.v1.GraphKeys.GLOBAL_STEP))
    except Exception:  # noqa: BLE001 -- as TF 1.15: no checkpoint (or no step in it) is step 0
        return 0


def _estimator_module(namespace, name):
    """`tensorflow.python.estimator.estimator`: tf.estimator's names plus TF 1.15's private helper above."""
    module = types.ModuleType(name, "tf.estimator as npurun provides it, at TF 1.15's estimator.py path")
    module.__getattr__ = lambda attribute: getattr(namespace, attribute)
    module._load_global_step_from_checkpoint_dir = _load_global_step_from_checkpoint_dir
    return module


def _estimator_package(name):
    namespace = _script_estimator()
    package = types.ModuleType(name)
    package.__path__ = []
    package.__dict__.update({sub: namespace for sub in _ESTIMATOR_MODULES})
    package.estimator = _estimator_module(namespace, f"{name}.estimator")
    package.__getattr__ = lambda attribute: getattr(namespace, attribute)  # PEP 562: the names of tf.estimator too
    return package


def _tensorflow_estimator_package():
    """`import tensorflow_estimator as tfe; tfe.estimator.DNNClassifier` (TF 2.x's separate estimator package)."""
    package = types.ModuleType(_TF_ESTIMATOR_PACKAGE, "tf.estimator as npurun provides it (TensorFlow 2.16+ has no "
                                                      "tensorflow_estimator)")
    package.__path__ = []
    package.estimator = _script_estimator()
    return package


def _real_tensorflow_estimator() -> bool:
    """Whether a real tensorflow_estimator is installed (then its own modules are imported, not npurun's)."""
    if _real_tensorflow_estimator.found is None:
        _real_tensorflow_estimator.found = importlib.machinery.PathFinder.find_spec(_TF_ESTIMATOR_PACKAGE) is not None
    return _real_tensorflow_estimator.found


_real_tensorflow_estimator.found = None


def _alias_package(fullname, target):
    """A package named `fullname` whose attributes are `target`'s (its submodules come from the finder)."""
    package = types.ModuleType(fullname, f"{target} at {fullname}")
    package.__path__ = []
    package.__getattr__ = lambda attribute: getattr(importlib.import_module(target), attribute)
    return package


def _extra_module(fullname):
    target = _EXTRA_MODULES[fullname]
    if callable(target):
        return target()
    if isinstance(target, tuple):
        return _alias_package(fullname, target[1])
    if target is not None:
        return importlib.import_module(target)
    module = types.ModuleType(fullname)
    module.__path__ = []
    return module


def _like_rnncell(cell):
    """TF 1.15's `rnn_cell_impl._like_rnncell`: whether `cell` has what an RNN cell has."""
    return (hasattr(cell, "output_size") and hasattr(cell, "state_size") and hasattr(cell, "zero_state")
            and callable(cell))


def _is_default_rate(optimizer, learning_rate) -> bool:
    """Whether `learning_rate` is the default of the optimizer class's __init__ (the script gave `lr` only)."""
    import inspect

    parameter = inspect.signature(type(optimizer).__init__).parameters.get("learning_rate")
    return parameter is not None and parameter.default is not inspect.Parameter.empty and (
        learning_rate is parameter.default or learning_rate == parameter.default)


_CONTROL_DEPENDENCY_MARK = "_has_manual_control_dependencies"


# tf.data's dataset classes (TensorFlow 2.21's names without the leading "_" and a V1/V2 suffix) whose inputs are
# all their datasets: a shuffle cannot hide in one of them (TensorFlow 1.15's `assert_not_shuffled` list).
_PLAIN_DATASETS = frozenset((
    "Batch", "Cache", "Concatenate", "Filter", "FixedLengthRecord", "MapAndBatch", "Map",
    "Options", "PaddedBatch", "ParallelMap", "Prefetch", "Range", "Repeat", "Shard", "Skip", "SparseTensorSlice",
    "Take", "Tensor", "TensorSlice", "TextLine", "TFRecord", "Unbatch", "Window", "Zip"))


def _may_be_shuffled(dataset, depth=0) -> bool:
    """TensorFlow 1.15's Keras check, on the dataset's Python objects: False only when every dataset down to
    the sources is a plain one (`_PLAIN_DATASETS`) and none shuffles."""
    name = type(dataset).__name__.lstrip("_")
    if "Shuffle" in name or depth > 200:
        return True
    if name == "DatasetV1Adapter" and hasattr(dataset, "_dataset"):  # graph mode's wrapper of each dataset
        return _may_be_shuffled(dataset._dataset, depth + 1)  # noqa: SLF001 - the dataset it wraps
    for suffix in ("V1", "V2"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    if name.endswith("Dataset"):
        name = name[:-len("Dataset")]
    if name not in _PLAIN_DATASETS:
        return True
    try:
        inputs = dataset._inputs()  # noqa: SLF001 - the datasets a tf.data dataset reads
    except Exception:  # noqa: BLE001 - a dataset that cannot say: it may be shuffled
        return True
    return any(_may_be_shuffled(child, depth + 1) for child in inputs)


def _graph_last_id(graph) -> int:
    """TF 2.12's `Graph._last_id`: the id of the op created last in the graph (0 for an empty graph)."""
    return max(graph._nodes_by_id.keys(), default=0)  # noqa: SLF001 - op id -> op, as Graph keeps them


def _moved_names(tf) -> tuple:
    """(module, TF 1.15 name, its value here) of TF 1.15 private names ModelZoo scripts use that moved in
    TensorFlow 2 (folders of ModelZoo-TensorFlow's TensorFlow/ using each: control_flow_ops.cond 19,
    nest.is_sequence 10, pywrap_tensorflow.NewCheckpointReader 10, control_flow_ops.while_loop 10,
    control_flow_ops.Assert 7, rnn_cell_impl._like_rnncell 6, variable_scope.variable 3,
    gen_nn_ops._max_pool_grad 3, ops.register_tensor_conversion_function 3)."""
    from tensorflow.python import pywrap_tensorflow
    from tensorflow.python.framework import ops, tensor_conversion_registry
    from tensorflow.python.ops import (cond, control_flow_assert, control_flow_ops, gen_nn_ops, rnn_cell_impl,
                                       variable_scope, while_loop)
    from tensorflow.python.util import nest

    return (
        (nest, "is_sequence", nest.is_nested), (nest, "is_sequence_or_composite", nest.is_nested_or_composite),
        (control_flow_ops, "cond", cond.cond), (control_flow_ops, "while_loop", while_loop.while_loop),
        (control_flow_ops, "Assert", control_flow_assert.Assert),
        (pywrap_tensorflow, "NewCheckpointReader", tf.compat.v1.train.NewCheckpointReader),
        (rnn_cell_impl, "_like_rnncell", _like_rnncell),
        (variable_scope, "variable", tf.compat.v1.Variable),
        (gen_nn_ops, "_max_pool_grad", gen_nn_ops.max_pool_grad),
        (ops, "register_tensor_conversion_function", tensor_conversion_registry.register_tensor_conversion_function),
    )


class TF1World:
    """Installs and removes everything above; `activate()` / `deactivate()` own one."""

    def __init__(self, graph_mode: bool, scripts_get_tf1: bool = True, scripts_get_keras2: bool = False):
        self.graph_mode = graph_mode
        # TensorFlow 2 scripts of the adapter's npu_device (TF 2.x era): standalone `keras` was Keras 2 there.
        self.scripts_get_keras2 = scripts_get_keras2 or scripts_get_tf1
        # False for TensorFlow 2 scripts (classic tf.estimator code): they keep `import tensorflow`
        # as it is; the TF 1 module paths below stay importable.
        self.scripts_get_tf1 = scripts_get_tf1
        self._finder = TF1Finder()
        self._finder.keras2_libraries = self.scripts_get_keras2 and not scripts_get_tf1
        self._original_import = None
        self._module = None
        self._patched = []  # (object, attribute) set by attach()
        self._restore = []  # (object, attribute, original value) replaced by attach()
        self._type_patched = []  # (C type, attribute) set by attach() through the type's dict
        self._warning_filters = []

    def install(self):
        sys.meta_path.insert(0, self._finder)
        # tf-keras warns at every tf.layers call site that tf.layers is deprecated; in a TF 1 script that is
        # noise on every run (TF 1.15 logged it once per function).
        self._warning_filters = []
        for message in (_LAYERS_DEPRECATED, _LAYER_APPLY_DEPRECATED) + _KERAS_NOISE:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
            self._warning_filters.append(warnings.filters[0])
        if self.scripts_get_keras2:
            warnings.filterwarnings("ignore", message=_KERAS_LR_DEPRECATED, category=UserWarning)
            self._warning_filters.append(warnings.filters[0])
        logging.getLogger("tensorflow").addFilter(_LIBRARY_DEPRECATIONS)
        if self.scripts_get_tf1:
            for logger in _tf1_current_names_loggers():
                logger.addFilter(_TF1_CURRENT_NAMES_FILTER)
            self._collections_abcs()  # Python's, not TensorFlow's: before a script imports TensorFlow
        logging.getLogger("tensorflow").addFilter(TENSORFLOW_LINES_ONCE)
        self._original_import = original = builtins.__import__

        def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
            script = (self.scripts_get_tf1 and level == 0 and name.partition(".")[0] == "tensorflow"
                      and is_script(globals))
            if (self.scripts_get_keras2 and level == 0 and (name == "keras" or name.startswith("keras."))
                    and is_script(globals)):
                return _standalone_keras(name, fromlist)
            if (not self.scripts_get_tf1 and self.scripts_get_keras2 and level == 0
                    and (name == "tensorflow.keras" or name.startswith("tensorflow.keras.")) and is_script(globals)):
                namespace = _tf2_keras_namespace(name)
                if namespace is not None and fromlist:
                    return namespace
                if namespace is not None:
                    # `import tensorflow.keras.backend as K` (5 TensorFlow2 folders): importing the path would
                    # make it Keras 3's and rebind `tf.keras` to Keras 3 for the rest of the script; `tensorflow`
                    # is returned and `.keras.backend` read from it, the script's tf.keras
                    return original("tensorflow", globals, locals, None, 0)
            if (self.scripts_get_keras2 and level == 0 and is_script(globals)
                    and (name == _TF_PYTHON_KERAS or name.startswith(_TF_PYTHON_KERAS + "."))):
                keras = _legacy_keras_module(name)
                layers = _keras2_layers_module(name, _TF_PYTHON_KERAS + ".layers", keras, fromlist)
                if layers is not None:
                    return layers
                if keras is not None and fromlist:
                    return keras
                # `import tensorflow.python.keras.backend as K`: Python reads the attributes `python`, `keras`,
                # `backend` off the module returned below; TF1Module's `python` gives tf-keras as `keras`, and
                # the submodule is imported above, so `backend` is tf-keras's too.
            if script and name == "tensorflow.python" and fromlist and "keras" in fromlist:
                # `from tensorflow.python import keras` (CPC_ID0921, Deep_Speech): TF 1's tf.keras, as the
                # `from tensorflow.python.keras import backend as K` beside it gets; TensorFlow 2.21's own
                # tensorflow.python.keras is a partial copy (no layers.BatchNormalization, its own session).
                # The real import runs first so the other names asked for (submodules) are loaded.
                original(name, globals, locals, fromlist, level)
                return _script_tf_python()
            if script and "." in name:
                namespace = self._api_namespace(name)
                if namespace is not None:  # `from tensorflow.train import AdamOptimizer`: TF 1's tf.train
                    return namespace if fromlist else self.module()
            module = original(name, globals, locals, fromlist, level)
            if script and getattr(module, "__name__", "") == "tensorflow":
                return self.module()
            return module

        builtins.__import__ = tf1_import

    def _api_namespace(self, name):
        """`tensorflow.train`, `tensorflow.layers`, `tensorflow.compat.v1.keras`, ... as TF 1's API has them.

        TF 1 could import its API namespaces as modules; TF 2's are TF 2's (or gone). Implementation
        paths (`tensorflow.python...`, `tensorflow.core...`) and the modules the finder provides are
        imported as they are.
        """
        parts = name.split(".")[1:]
        if parts[0] in _IMPLEMENTATION_PACKAGES:
            return None
        value = self.module()
        for part in parts:
            value = getattr(value, part, None)
            if not isinstance(value, types.ModuleType):
                return None
        return value

    def module(self) -> TF1Module:
        if self._module is None:
            import tensorflow as tf

            if self.graph_mode:
                self._enter_graph_mode()
            self._module = TF1Module(tf)
        return self._module

    def _enter_graph_mode(self):
        from tensorflow.python.compat import v2_compat
        from tensorflow.python.eager import context
        from tensorflow.python.ops import resource_variables_toggle
        from tensorflow.python.util import deprecation

        if context.executing_eagerly():
            # The switches are deprecated for users migrating to TF 2; here they are the point.
            with deprecation.silence():
                v2_compat.disable_v2_behavior()
                resource_variables_toggle.enable_resource_variables()

    def attach(self, tf):
        """When TensorFlow is imported: TF 1 names at their TF 1 paths (`graph_util.convert_variables_to_constants`)."""
        from tensorflow.python.framework import graph_util, indexed_slices, ops, tensor, tensor_conversion
        from tensorflow.python import training as training_package
        from tensorflow.python.ops import array_ops, array_ops_stack, gen_training_ops

        # tf-slim 1.1 (and TF 1 code reaching into tensorflow.python) still name ops.Tensor / ops.IndexedSlices,
        # which TensorFlow 2.21 moved to their own modules: the same classes, at their old names.
        for obj, attribute, value in _moved_names(tf) + (
                (graph_util, "convert_variables_to_constants", tf.compat.v1.graph_util.convert_variables_to_constants),
                (ops, "Tensor", tensor.Tensor), (ops, "IndexedSlices", indexed_slices.IndexedSlices),
                # TF 1 code calling array_ops.stack / unstack (TabNet's sparsemax; 17 ModelZoo folders): TF 2.13
                # moved them to array_ops_stack
                (array_ops, "stack", array_ops_stack.stack), (array_ops, "unstack", array_ops_stack.unstack),
                # Keras 2.x optimizers copied into TF 2.x-era scripts (involution's my_adam.py) import it from
                # tensorflow.python.training, where TF <= 2.8 also had it
                (training_package, "gen_training_ops", gen_training_ops),
                # official models' LARS learning-rate schedule (lars_util.py, 3 TensorFlow2 folders): TF 2.13 moved
                # it to tensor_conversion
                (ops, "convert_to_tensor_v2", tensor_conversion.convert_to_tensor_v2),
                # the adapter's npu_ops.py, vendored into 24 TensorFlow2 ModelZoo folders beside
                # npu_convert_dropout.py, seeds its dropout with the graph's last op id (TF <= 2.12's Graph had it)
                (ops.Graph, "_last_id", property(_graph_last_id))):
            if not hasattr(obj, attribute):
                setattr(obj, attribute, value)
                self._patched.append((obj, attribute))
        # `tf.compat.v1` is TensorFlow 1's API with what npurun attaches (tf.estimator, ...); TensorFlow generates
        # a second copy of that API as `tf.compat.v1.compat.v1`, which scripts reach when a star import gave them
        # `tf` = tf.compat.v1 (npu_device.compat.v1.npu_init under TensorFlow 2) and they then write
        # `tf.compat.v1.estimator.tpu.RunConfig` (Roberta_Series; 4 TensorFlow2 folders read tf.compat.v1 after
        # that import): it is the one API here
        compat_of_v1 = tf.compat.v1.compat
        if getattr(compat_of_v1, "v1", None) is not tf.compat.v1:
            self._restore.append((compat_of_v1, "v1", getattr(compat_of_v1, "v1", None)))
            compat_of_v1.v1 = tf.compat.v1
        if self.scripts_get_keras2 and not self.scripts_get_tf1:
            self._keras2_lr()
            self._new_optimizers_in_graph_mode()
        if self.scripts_get_keras2:
            # TF 1.15's and the npu_device (TF 2.4-era) scripts' environment alike: NumPy < 1.24, absl-py 0.x,
            # Keras 2.1-2.4's tf.keras.mixed_precision.experimental
            self._numpy_aliases()
            self._absl_str_enums()
            self._keras_2_4_names()
        if self.scripts_get_tf1:
            # TF 1.15's `tf.compat.v1` was its whole v1 API, `contrib` included (a lazy loader): ProtoAttend's,
            # Yolov5_ID1720's and IEG's `tf.compat.v1.contrib.layers` / `.framework` / `.image` (3 folders)
            if not hasattr(tf.compat.v1, "contrib"):
                tf.compat.v1.contrib = contrib.module_for("tensorflow.contrib")
                self._patched.append((tf.compat.v1, "contrib"))
            self._quiet_control_dependency_marks()
            self._keras_v1_progress_bar()
            self._keras_dataset_check_quiet()
            self._keras_shape()
            self._variables_by_name()
            self._variable_truth()
            self._initialized_value()
            self._integral_float_dimensions()
            import time

            # Python 3.7 (TensorFlow 1.15's newest) still had time.clock, on Linux the process's CPU time;
            # 3.8 removed it (5 ModelZoo folders time steps with it: GRU4Rec).
            if not hasattr(time, "clock"):
                time.clock = time.process_time
                self._patched.append((time, "clock"))
            self._inspect_getargspec()

    def _collections_abcs(self):
        """`collections.Iterable`, `from collections import Sequence`, ...: Python 3.7 (TensorFlow 1.15's newest)
        still gave the abstract base classes of `collections.abc` at their old home (deprecated since 3.3);
        3.10 removed them. 21 ModelZoo folders use them (Vega's `ext_hyper_parameter.py`, imported by
        `import vega`: `from collections import Iterable, defaultdict`; `isinstance(x, collections.Sequence)`
        in copies of TF 1 utility code). Each is the class of `collections.abc`, as it was."""
        import collections
        import collections.abc

        for name in _PY37_COLLECTIONS_ABCS:
            if name not in vars(collections) and hasattr(collections.abc, name):
                setattr(collections, name, getattr(collections.abc, name))
                self._patched.append((collections, name))

    def _inspect_getargspec(self):
        """`inspect.getargspec` (Python 3.7's, which TensorFlow 1.15 ran on; removed in 3.11): the named tuple
        `ArgSpec(args, varargs, keywords, defaults)` of `getfullargspec`, refusing keyword-only parameters and
        annotations with 3.7's ValueError. 18 ModelZoo folders call it (autoaugment.py's `_parse_policy_info`
        asks whether an augmentation takes `prob`: ASSEMBLED-CNN_ID0941, EfficientNet-style input pipelines)."""
        import collections
        import inspect

        if hasattr(inspect, "getargspec"):
            return
        if not hasattr(inspect, "ArgSpec"):
            inspect.ArgSpec = collections.namedtuple("ArgSpec", "args varargs keywords defaults")
            self._patched.append((inspect, "ArgSpec"))

        def getargspec(func):
            spec = inspect.getfullargspec(func)
            if spec.kwonlyargs or spec.annotations:
                raise ValueError("Function has keyword-only parameters or annotations, use inspect.signature() "
                                 "API which can support them")
            return inspect.ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)

        inspect.getargspec = getargspec
        self._patched.append((inspect, "getargspec"))

    def _keras_shape(self):
        """`x._keras_shape` on a graph tensor: standalone Keras 2.0-2.3 (TensorFlow 1.15 scripts' `keras`) set it
        on every layer output, its static shape as a tuple (None where unknown); TF 1 scripts read it to size
        shortcuts (3D_ResNet's resnet3d.py; 9 ModelZoo folders). tf-keras, their `keras` here, no longer sets it."""
        from tensorflow.python.framework import tensor

        if hasattr(tensor.Tensor, "_keras_shape"):
            return

        def keras_shape(value):
            return None if value.shape.rank is None else tuple(value.shape.as_list())

        tensor.Tensor._keras_shape = property(keras_shape)
        self._patched.append((tensor.Tensor, "_keras_shape"))

    def _quiet_control_dependency_marks(self):
        """TensorFlow 2's `tf.control_dependencies` marks each control input with the attribute
        `_has_manual_control_dependencies` (bookkeeping for its MLIR bridge; TensorFlow 1.15 had no such
        mark). On an op a session has already been given, TensorFlow ignores that change and logs a native
        WARNING at the next run ("... was changed by setting attribute after it was run by a session"):
        a Keras 2 model fitted on the script's session after `load_weights` or `K.get_session()` (squeezenet's
        train_npu.py) logs one per variable. The mark is skipped on such ops, for which it has no effect
        anyway; ops no session has been given yet still get it."""
        from tensorflow.python.client import session
        from tensorflow.python.framework import ops

        base, operation = session.BaseSession, ops.Operation
        original_extend, original_set_attr = base.__dict__.get("_extend_graph"), operation.__dict__.get("_set_attr")
        if original_extend is None or original_set_attr is None:
            return

        def _extend_graph(sess):
            original_extend(sess)
            graph = sess.graph
            version = graph.version
            if getattr(graph, "_npurun_given_version", None) != version:  # ops added since the last run
                graph._npurun_given_version = version
                graph._npurun_given_last_id = _graph_last_id(graph)

        def _set_attr(op, attr_name, attr_value):
            if attr_name == _CONTROL_DEPENDENCY_MARK and op._id <= getattr(op.graph, "_npurun_given_last_id", 0):
                return
            original_set_attr(op, attr_name, attr_value)

        base._extend_graph = _extend_graph
        operation._set_attr = _set_attr
        self._restore.append((base, "_extend_graph", original_extend))
        self._restore.append((operation, "_set_attr", original_set_attr))

    def _keras_dataset_check_quiet(self):
        """Keras fit on a tf.data dataset in graph mode (squeezenet's train_npu.py) checks that the dataset is
        shuffled. tf-keras adds a `DatasetToGraphV2` op to the script's graph to read the dataset's graph, and at the
        session's next run TensorFlow 2's type inference logs that op's types as a failure it then ignores (some 50
        lines). TensorFlow 1.15's Keras walked the dataset's Python objects instead (`assert_not_shuffled`), adding
        nothing to the graph; so does this check in graph mode, with TF 1.15's answer: shuffled when a shuffle is
        found or when a dataset of another kind (interleave, flat_map, ...) may hide one, and the warning that the
        dataset is not shuffled only when the walk reaches its sources through plain datasets."""
        try:
            from tensorflow.python.eager import context
            from tf_keras.src.engine import training_utils_v1
        except ImportError:
            return
        original = training_utils_v1.__dict__.get("verify_dataset_shuffled")
        if original is None:
            return

        def verify_dataset_shuffled(x):
            if context.executing_eagerly():
                return original(x)
            shuffled = _may_be_shuffled(x)
            if not shuffled:
                training_utils_v1.logging.warning("Expected a shuffled dataset but input dataset `x` is not shuffled. "
                                                  "Please invoke `shuffle()` on input dataset.")
            return shuffled

        training_utils_v1.verify_dataset_shuffled = verify_dataset_shuffled
        self._restore.append((training_utils_v1, "verify_dataset_shuffled", original))

    def _keras_v1_progress_bar(self):
        """Keras fit in graph mode with `steps_per_epoch` (squeezenet's train_npu.py) shows the loss and metrics on
        its progress bar, as TensorFlow 1.15's Keras did; tf-keras's ProgbarLogger also showed the graph-mode loop's
        per-batch bookkeeping, `batch: 49.5000 - size: 1.0000`, as if they were metrics."""
        try:
            from tf_keras.src import callbacks
        except ImportError:
            return
        cls = callbacks.ProgbarLogger
        original = cls.__dict__.get("_batch_update_progbar")
        if original is None:
            return

        def _batch_update_progbar(self, batch, logs=None):
            if self.use_steps and logs and "batch" in logs and "size" in logs:  # the graph-mode loop's batch_logs
                logs = {key: value for key, value in logs.items() if key not in ("batch", "size", "num_steps")}
            return original(self, batch, logs)

        cls._batch_update_progbar = _batch_update_progbar
        self._restore.append((cls, "_batch_update_progbar", original))

    def _variable_truth(self):
        """`if var:` on a variable in a graph is True, as on TensorFlow 1.15's ref variables (which had no
        `__bool__`): resource variables read their value, which a graph cannot give as a Python bool. Google's
        MixMatch/FixMatch custom getter `ema_var if ema_var else var` (5 ModelZoo folders) does this. Eager
        variables keep their value's truth."""
        from tensorflow.python.eager import context
        from tensorflow.python.ops import resource_variable_ops

        cls = resource_variable_ops.BaseResourceVariable
        original = cls.__dict__.get("__bool__")
        if original is None:
            return

        def __bool__(variable):
            return original(variable) if context.executing_eagerly() else True

        cls.__bool__ = __bool__
        self._restore.append((cls, "__bool__", original))

    def _initialized_value(self):
        """`var.initialized_value()`: the variable's value once initialized, else its initial value, as TensorFlow
        1.15 gave it (a cond on is_variable_initialized, built outside any control-flow context). Weight-normalized
        layers' data-dependent initialization uses it (MEAN-TEACHER's weight_norm.py; 24 ModelZoo folders call
        it); TensorFlow 2.21 kept the method only to raise NotImplementedError."""
        from tensorflow.python.framework import ops
        from tensorflow.python.ops import cond, state_ops, variables

        cls = variables.Variable
        original = cls.__dict__.get("initialized_value")
        if original is None or getattr(original, "__npurun_initialized_value__", False):
            return

        def initialized_value(variable):
            with ops.init_scope():
                return cond.cond(state_ops.is_variable_initialized(variable), variable.read_value,
                                 lambda: variable.initial_value)

        initialized_value.__npurun_initialized_value__ = True
        initialized_value.__doc__ = original.__doc__
        cls.initialized_value = initialized_value
        self._restore.append((cls, "initialized_value", original))

    def _integral_float_dimensions(self):
        """A shape dimension given as a float with an integral value (`[k, k, in_channel / split, out_channel]`,
        a filter shape in Python 3 division: the cnn_basenet of MNN-LANENET_ID1251 and CRNN_Kernel_ID0055) is
        that int, as TensorFlow 1.15's Dimension took `int(value)`; a float that is not integral is refused
        with TF 1.15's "Ambiguous dimension". TensorFlow 2 accepts only ints and `__index__` (TypeError)."""
        import numpy
        from tensorflow.python.framework import tensor_shape

        cls = tensor_shape.Dimension
        original = cls.__dict__["__init__"]

        def __init__(dimension, value):
            if isinstance(value, (float, numpy.floating)):
                if not numpy.isfinite(value) or int(value) != value:
                    raise ValueError(f"Ambiguous dimension: {value}")
                value = int(value)
            original(dimension, value)

        cls.__init__ = __init__
        self._restore.append((cls, "__init__", original))

    def _variables_by_name(self):
        """'global_step:0' by name is the variable's value, as TensorFlow 1.15's ref variables were (21
        ModelZoo folders fetch 'global_step:0' or 'loss_scale:0' with sess.run or get_tensor_by_name and
        compute with it): a string fetch in Session.run, and a script's `graph.get_tensor_by_name`, of a
        resource variable's handle give its value (`inner_fetches.variable_value`). TensorFlow's own
        callers of get_tensor_by_name keep the handle."""
        from tensorflow.python.client import session
        from tensorflow.python.framework import ops

        def variable_value(element):
            # imported when used: this runs as TensorFlow is imported, which npurun.distribute.optimizer does
            # before it has defined what npurun.estimator imports from it (a script's first TensorFlow import
            # can be `from npu_bridge.estimator.npu.npu_optimizer import NPUDistributedOptimizer`)
            from ..estimator.inner_fetches import variable_value as value

            return value(element)

        mapper = session._ElementFetchMapper
        mapper_init = mapper.__init__
        get_tensor_by_name = ops.Graph.get_tensor_by_name
        if getattr(mapper_init, "__npurun_values__", False):
            return

        def init(self, fetches, contraction_fn):
            mapper_init(self, fetches, contraction_fn)
            self._unique_fetches = [variable_value(element) if isinstance(fetch, str) else element
                                    for fetch, element in zip(fetches, self._unique_fetches)]

        def by_name(graph, name):
            tensor = get_tensor_by_name(graph, name)
            return variable_value(tensor) if is_script(sys._getframe(1).f_globals) else tensor

        init.__npurun_values__ = True
        by_name.__doc__ = get_tensor_by_name.__doc__
        mapper.__init__ = init
        ops.Graph.get_tensor_by_name = by_name
        self._restore += [(mapper, "__init__", mapper_init), (ops.Graph, "get_tensor_by_name", get_tensor_by_name)]

    def _keras2_lr(self):
        """`tf.keras.optimizers.SGD(lr=0.0005)` in a TF 2.x-era script (8 TensorFlow2 ModelZoo folders): Keras 2.x's
        optimizers took `lr` for learning_rate; tf-keras's warns and drops it, training at its default rate. Here
        `lr` is the learning rate again, as the script's Keras had it (both given: learning_rate wins, as there)."""
        from tf_keras.src.optimizers import optimizer

        base = optimizer._BaseOptimizer  # noqa: SLF001 - every tf-keras optimizer's __init__ runs these two
        process, build = base._process_kwargs, base._build_learning_rate  # noqa: SLF001
        if getattr(process, "__npurun_lr__", False):
            return

        def process_kwargs(self, kwargs):
            if kwargs.get("lr") is not None:
                self.__dict__["_npurun_lr"] = kwargs.pop("lr")
            return process(self, kwargs)

        def build_learning_rate(self, learning_rate):
            lr = self.__dict__.pop("_npurun_lr", None)
            return build(self, lr if lr is not None and _is_default_rate(self, learning_rate) else learning_rate)

        process_kwargs.__npurun_lr__ = True
        base._process_kwargs, base._build_learning_rate = process_kwargs, build_learning_rate  # noqa: SLF001
        self._restore += [(base, "_process_kwargs", process), (base, "_build_learning_rate", build)]

    def _keras_2_4_names(self):
        """Names the script's `tf.keras` had up to Keras 2.4 and tf-keras's API namespace lacks:
        `tf.keras.mixed_precision.experimental.set_policy(...)` (official models' performance.py, vendored into
        7 TensorFlow2 folders: npurun.tf1.keras_mixed_precision) and `tf.keras.__version__` (tf-keras's version;
        subclassing_conv_layers_ID2615 prints it first thing)."""
        import importlib

        from . import keras_mixed_precision

        for api in ("tf_keras.api._v2.keras", "tf_keras.api._v1.keras"):
            try:
                keras = importlib.import_module(api)
                mixed_precision = importlib.import_module(api + ".mixed_precision")
            except ImportError:
                continue
            if not hasattr(mixed_precision, "experimental"):
                mixed_precision.experimental = keras_mixed_precision.module()
                self._patched.append((mixed_precision, "experimental"))
            if not hasattr(keras, "__version__"):
                keras.__version__ = importlib.import_module("tf_keras").__version__
                self._patched.append((keras, "__version__"))

    def _new_optimizers_in_graph_mode(self):
        """`from tensorflow.keras.optimizers import Adam`, then TensorFlow 1 behaviour (`npu_device.compat.enable_v1()`,
        `tf.disable_v2_behavior()`) and `model.compile(optimizer=Adam(...))` (Oct-ResNet_ID2890; 5 TensorFlow2
        folders mix graph mode and tf.keras.optimizers): TF 2.4's Adam was a graph-mode optimizer. tf-keras's
        graph-mode compile converts its Adam to the legacy one from its config, which reads each hyperparameter
        variable's value, and a variable has no value in a graph before a session runs it: its initial value (the
        number the script gave) is its value then."""
        import tensorflow as tf
        from tf_keras.src.optimizers import optimizer

        base = optimizer._BaseOptimizer  # noqa: SLF001 - get_config of every tf-keras optimizer calls this
        original = base._serialize_hyperparameter  # noqa: SLF001
        if getattr(original, "__npurun_graph__", False):
            return

        def serialize_hyperparameter(self, hyperparameter):
            if isinstance(hyperparameter, tf.Variable) and not tf.executing_eagerly():
                value = tf.get_static_value(hyperparameter.initial_value)
                if value is not None:
                    return value.item() if hasattr(value, "item") else value
            return original(self, hyperparameter)

        serialize_hyperparameter.__npurun_graph__ = True
        base._serialize_hyperparameter = serialize_hyperparameter  # noqa: SLF001
        self._restore.append((base, "_serialize_hyperparameter", original))

    def _absl_str_enums(self):
        """`flags.DEFINE_enum(..., enum_values=("keras', 'graph_rewrite"), ...)`: official-models scripts (9
        ModelZoo folders; 7 TensorFlow2 npu_device folders vendor the same flags code) pass a str by mistake.
        absl-py 0.x, TensorFlow 1.15's and TF 2.4's, kept it and tested membership in it
        (`'keras' in "keras', 'graph_rewrite"`); absl-py 1.0+ refuses a str. Here a str is kept as 0.x kept
        it, for the script's run (put back when the world is uninstalled)."""
        from absl.flags import _argument_parser

        parser = _argument_parser.EnumParser
        original = parser.__init__
        if getattr(original, "__npurun_str_enum__", False):
            return

        def init(self, enum_values, case_sensitive=True):
            as_given = enum_values
            original(self, [enum_values] if isinstance(enum_values, str) else enum_values, case_sensitive)
            if isinstance(as_given, str):
                self.enum_values = as_given  # membership is a substring test, as in absl-py 0.x

        init.__npurun_str_enum__ = True
        parser.__init__ = init
        self._restore.append((parser, "__init__", original))

    def _numpy_aliases(self):
        """NumPy's aliases of Python types that TensorFlow 1.15's NumPy (< 1.24) still had: `np.float`,
        `np.int`, `np.bool`, ... (70, 95 and 47 ModelZoo folders use these three). NumPy 1.24 removed them;
        each is the builtin it always was. Names NumPy has again (NumPy 2's `np.long`) are left alone.
        NumPy 2.0's removed aliases (`np.NaN`, `np.Inf`, `np.product`, ...) are the names it points to instead;
        its removed `np.cast` and `np.asfarray` are NumPy 1's."""
        import numpy

        # (a NumPy without one of the targets gives nothing for that name rather than failing the run)
        removed = {name: getattr(numpy, target) for name, target in _NUMPY2_REMOVED.items() if hasattr(numpy, target)}
        for attribute, value in {**_NUMPY_ALIASES, **removed, **_NUMPY2_REMOVED_VALUES,
                                 **_NUMPY2_REMOVED_FUNCTIONS}.items():
            if attribute not in numpy.__dict__:
                try:
                    with warnings.catch_warnings():  # NumPy 2 warns about what some of these names will become
                        warnings.simplefilter("ignore")
                        getattr(numpy, attribute)
                    continue  # provided by NumPy itself (its module __getattr__)
                except AttributeError:
                    pass
                setattr(numpy, attribute, value)
                self._patched.append((numpy, attribute))
        for cls in (numpy.ndarray, numpy.generic):
            for attribute, target in _NUMPY_REMOVED_METHODS.items():
                if not hasattr(cls, attribute) and hasattr(cls, target) and \
                        _set_type_attribute(cls, attribute, getattr(cls, target)):
                    self._type_patched.append((cls, attribute))
        self._numpy_fromstring_binary()

    def _numpy_fromstring_binary(self):
        """`np.fromstring(data, dtype)` without `sep`, the binary mode (deprecated since NumPy 1.14, removed in
        NumPy 2: "The binary mode of fromstring is removed"): a new array holding a copy of the bytes, which is
        `np.frombuffer(...).copy()`. 22 ModelZoo folders call np.fromstring, nearly all so (UGATIT_ID0722's
        `cv2.imdecode(np.fromstring(f.read(), np.uint8), ...)`); the text mode (`sep=' '`) is NumPy's own."""
        import numpy

        original = numpy.fromstring
        try:
            original(b"\0", numpy.uint8)
            return  # the installed NumPy still has the binary mode
        except ValueError:
            pass

        @functools.wraps(original)
        def fromstring(string, dtype=float, count=-1, *, sep="", **kwargs):
            if sep == "":
                return numpy.frombuffer(string, dtype=dtype, count=count, **kwargs).copy()
            return original(string, dtype=dtype, count=count, sep=sep, **kwargs)

        numpy.fromstring = fromstring
        self._restore.append((numpy, "fromstring", original))

    def uninstall(self):
        while self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        if self._original_import is not None and builtins.__import__ is not self._original_import:
            builtins.__import__ = self._original_import
        removed = [entry for entry in self._warning_filters if entry in warnings.filters]
        for entry in removed:
            warnings.filters.remove(entry)
        if removed:
            getattr(warnings, "_filters_mutated", lambda: None)()  # what filterwarnings() itself calls
        self._warning_filters = []
        logging.getLogger("tensorflow").removeFilter(_LIBRARY_DEPRECATIONS)
        for logger in _tf1_current_names_loggers():
            logger.removeFilter(_TF1_CURRENT_NAMES_FILTER)
        logging.getLogger("tensorflow").removeFilter(TENSORFLOW_LINES_ONCE)
        for name in list(sys.modules):
            if name.startswith(("tensorflow.contrib", "tensorflow_core")) or name in _EXTRA_MODULES:
                del sys.modules[name]
        real = sys.modules.get("tensorflow")
        for attribute in ("contrib", "examples"):  # the import system set them on the real module
            if real is not None and attribute in getattr(real, "__dict__", {}):
                delattr(real, attribute)
        for name in _EXTRA_MODULES:  # ... and on real packages deeper down (`...experimental.ops.threadpool`)
            parent, _, attribute = name.rpartition(".")
            if attribute in getattr(sys.modules.get(parent), "__dict__", {}):
                delattr(sys.modules[parent], attribute)
        for obj, attribute in self._patched:
            delattr(obj, attribute)
        self._patched.clear()
        for cls, attribute in self._type_patched:
            _set_type_attribute(cls, attribute, None)
        self._type_patched.clear()
        for obj, attribute, original in reversed(self._restore):
            setattr(obj, attribute, original)
        self._restore.clear()
        # Graph mode, once entered, stays: TensorFlow cannot go back to eager after building graphs.
        self._module = None
