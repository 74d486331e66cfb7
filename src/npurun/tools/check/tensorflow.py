"""What `npurun check` says about a script's TensorFlow names, without importing TensorFlow.

Under `npurun run` a script's `import tensorflow as tf` gives TensorFlow 1's API (npurun's TF1
world: `tf.compat.v1` plus `tf.contrib`), so `tf.X.Y` is looked up in TensorFlow 1's API names
(`npurun.tf1.api_names`, generated from the installed TensorFlow), `tf.contrib...` in the contrib table
(`npurun.tf1.contrib`, owned by the TF1 world), and `tensorflow.python...` module paths on disk.
Each classification is `(status, detail, error)`; `error` means "this raises here".
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from functools import lru_cache

from ...tf1.api_names import generated as tf_api_names

TF1_WORLD = "provided by npurun's TF1 world"
_WORLD_WHY = ("TensorFlow 2 has no tf.{name}; under `npurun run` a script's `import tensorflow` gives TensorFlow 1's "
              "API, which has it")
# TF 1 module paths the TF1 world puts back (npurun.tf1.world).
WORLD_PATHS = {
    "tensorflow.examples.tutorials.mnist.input_data": "npurun.tf1.mnist_input_data: read_data_sets reads the "
                                                      "standard MNIST files from the directory (no download)",
    "tensorflow.python.framework.graph_util.convert_variables_to_constants":
        "tf.compat.v1.graph_util.convert_variables_to_constants, at its TensorFlow 1 path",
    "tensorflow.python.keras": "tf-keras's module at the same place below tf_keras.src (the Keras the script's "
                               "tf.keras is; `from ... import` form)",
    **{f"tensorflow.python.estimator.{sub}": "the script's tf.estimator (npurun's Estimator, RunConfig, "
                                              "EstimatorSpec, ModeKeys, ...)"
       for sub in ("estimator", "run_config", "model_fn", "training")},
    "tensorflow.python.data.experimental.ops.threadpool": "npurun.tf1.data_threadpool: PrivateThreadPool and "
                                                          "override_threadpool as tf.data threading options",
    "tensorflow.python.eager.profiler": "npurun.tf1.eager_profiler: start/stop/save on TensorFlow's profiler",
    "tensorflow.python.distribute.distribution_strategy_context": "TensorFlow's distribute_lib (get_strategy, ...)",
    "tensorflow.python.training.distribution_strategy_context": "TensorFlow's distribute_lib (get_strategy, ...)",
    "tensorflow.python.tpu.tpu_config": "npurun.tf1.contrib.tpu (RunConfig, TPUConfig, InputPipelineConfig)",
    **{f"tensorflow.python.training.tracking.{sub}": f"TensorFlow's tensorflow.python.trackable.{target}, where "
                                                     f"later TensorFlow moved it"
       for sub, target in (("tracking", "autotrackable"), ("base", "base"), ("data_structures", "data_structures"))},
    "tensorflow.tools.graph_transforms": "npurun.tf1.graph_transforms for the import; calling TransformGraph raises "
                                        "AdapterAPIError (TensorFlow 2.21 has no Graph Transform Tool)",
}
for _module in ("dnn", "linear", "dnn_linear_combined", "baseline", "boosted_trees", "head", "optimizers",
                "metric_keys", "prediction_keys", "parsing_utils"):
    WORLD_PATHS[f"tensorflow.python.estimator.canned.{_module}"] = (
        f"npurun.tf_estimator.canned.{_module} (tf.estimator's premade estimators, heads and helpers)")
for _module in ("base_head", "binary_class_head", "multi_class_head", "multi_label_head", "regression_head",
                "multi_head", "head_utils"):
    WORLD_PATHS[f"tensorflow.python.estimator.head.{_module}"] = "npurun.tf_estimator.head (tf.estimator's heads)"
WORLD_PACKAGES = ("tensorflow.examples", "tensorflow.examples.tutorials", "tensorflow.examples.tutorials.mnist",
                  "tensorflow.python.estimator", "tensorflow.python.estimator.canned",
                  "tensorflow.python.estimator.head", "tensorflow.python.training.tracking")
# Namespaces of `tf` handled by npurun's own tables elsewhere in check.
OWN_TABLES = ("estimator", "layers")


def world_available() -> bool:
    """Whether this installation has npurun's TF1 world (`npurun.tf1.world`)."""
    return module_exists("npurun.tf1.world")


def _world(detail: str):
    if world_available():
        return (TF1_WORLD, detail, False)
    return ("error", f"{detail.split(';')[0]}; this installation of npurun has no TF1 world to provide it", True)


def contrib_table():
    """The TF1 world's contrib table (`npurun.tf1.contrib`), or None when this installation has none."""
    try:
        return importlib.import_module("npurun.tf1.contrib")
    except ImportError:
        return None


@lru_cache(maxsize=None)
def _package_dir(top: str):
    if top == "npurun":
        return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # npurun/tools/check/
    spec = importlib.util.find_spec(top)  # a top-level name: locates it without importing anything
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return ""  # a plain module: no submodules


@lru_cache(maxsize=None)
def module_exists(dotted: str) -> bool:
    """Whether `dotted` is an installed module or package, found on disk (nothing is imported)."""
    top, *rest = dotted.split(".")
    if top in sys.builtin_module_names:
        return not rest
    base = _package_dir(top)
    if base is None:
        return False
    if not rest:
        return True
    if not base:
        return False
    path = os.path.join(base, *rest)
    if os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py")):
        return True
    folder, leaf = os.path.split(path)
    try:
        return any(entry.startswith(leaf + ".") and entry.endswith((".so", ".pyd")) for entry in os.listdir(folder))
    except OSError:
        return False


def target_availability(target: str) -> str:
    """'available' or 'not available yet: <reason>' for a coverage-table target, from the files installed."""
    module = target.partition(":")[0]
    if module_exists(module):
        return "available"
    return f"not available yet: no module {module!r}"


def classify(qualified: str, world: bool, tf2: bool = False):
    """(status, detail, error) for a use of `qualified` (a dotted `tensorflow...` name), or None if unremarkable.

    `world`: the name was reached through `import tensorflow` (TF 1's API under npurun run), not
    `tensorflow.compat.v1`. `tf2`: the script imports `npu_device` (the adapter's TensorFlow 2 package), so
    `npurun run` keeps TensorFlow 2's API for it: `tf.X.Y` is looked up there (`tf.random.set_seed`)."""
    parts = qualified.split(".")
    if tf2 and world and parts[1:2] not in (["contrib"], ["compat"], ["python"], ["core"], ["examples"], ["tools"]):
        return _classify_api(parts[1:], tf_api_names.TF2, "tf", world=False, version="2")
    if parts[1:2] == ["contrib"]:
        return classify_contrib(".".join(parts[2:]))
    if parts[1:4] == ["compat", "v1", "contrib"] and not tf2:
        return classify_contrib(".".join(parts[4:]))  # TF 1.15's tf.compat.v1 had contrib too (the TF1 world's)
    if parts[1:3] == ["compat", "v1"]:
        return _classify_api(parts[3:], tf_api_names.TF1, "tf.compat.v1", world=False)
    if parts[1:2] in (["python"], ["core"], ["examples"], ["tools"]):
        return classify_module_path(qualified)
    if world:
        return _classify_api(parts[1:], tf_api_names.TF1, "tf", world=True)
    return None


def _classify_api(parts, api, shown, world, version="1"):
    if not parts or parts[0] in OWN_TABLES or parts[0] == "compat" or parts[0].startswith("_"):
        return None  # (module attributes such as tf.__version__ are not API names)
    name, member = parts[0], (parts[1] if len(parts) > 1 and not parts[1].startswith("_") else None)
    if name not in api:
        return ("error", f"{shown}.{name} does not exist in TensorFlow {version}'s API here (AttributeError)", True)
    members = api[name]
    if member is not None and members and member not in members:
        return ("error", f"{shown}.{name}.{member} does not exist in TensorFlow {version}'s API here (AttributeError)",
                True)
    if not world:
        return None
    tf2 = tf_api_names.TF2
    if name not in tf2:
        return _world(_WORLD_WHY.format(name=name))
    if member is not None and tf2[name] and member not in tf2[name]:
        return _world(_WORLD_WHY.format(name=f"{name}.{member}"))
    return None


def classify_contrib(rest: str):
    """(status, detail, error) for `tf.contrib.<rest>`, from the TF1 world's contrib table."""
    if not rest:
        return None
    table = contrib_table() if world_available() else None
    shown = f"tf.contrib.{rest}"
    if table is None:
        return ("error", "TensorFlow 2 removed tf.contrib and this installation of npurun does not provide it", True)
    for path, package in sorted(table.PATHS.items(), key=lambda item: -len(item[0])):
        if rest == path or rest.startswith(path + "."):
            return (TF1_WORLD, f"{shown}: the `{package.split('.')[0].replace('_', '-')}` package "
                               f"(`{package}{rest[len(path):]}`)", False)
    import_only = getattr(table, "IMPORT_ONLY_PATHS", {})
    for path, why in import_only.items():
        if rest.startswith(path + "."):
            return ("unsupported", f"raises AdapterAPIError: {why}", True)
        if rest == path:
            return (TF1_WORLD, f"{shown}: importing it works; any use of its names raises AdapterAPIError", False)
    if any(path.startswith(rest + ".") for path in (*table.PATHS, *import_only)):
        return None  # an intermediate package of a deep path the table provides (`tpu.python.tpu`)
    top, _, name = rest.partition(".")
    name = name.split(".")[0]
    nested = next((module for module in table.MODULES if "." in module and rest.startswith(module + ".")), None)
    if nested is not None:  # a module inside a module (`losses.metric_learning`): its own table
        top, name = nested, rest[len(nested) + 1:].split(".")[0]
    if top in table.PACKAGES:
        return (TF1_WORLD, f"{shown}: the `{table.PACKAGES[top].replace('_', '-')}` package", False)
    if top in table.UNSUPPORTED_MODULES:
        if rest == top:  # `from tensorflow.contrib import cluster_resolver` imports, as on TF 1; its names raise
            return ("unsupported", f"importing it works; using its names raises AdapterAPIError: "
                                   f"{table.UNSUPPORTED_MODULES[top]}", False)
        return ("unsupported", f"raises AdapterAPIError when used: {table.UNSUPPORTED_MODULES[top]}", True)
    if top not in table.MODULES:
        return ("unsupported", "raises AdapterAPIError when used: not in npurun's tf.contrib table", True)
    if not name:
        return None
    entry = table.MODULES[top].get(name)
    if entry is None:
        return ("unsupported", f"raises AdapterAPIError when used: tf.contrib.{top}.{name} is not in npurun's "
                               f"tf.contrib table", True)
    if getattr(entry, "why", None) is not None and not hasattr(entry, "target"):
        return ("unsupported", f"raises AdapterAPIError when used: {entry.why}", True)
    return (TF1_WORLD, f"tf.contrib.{top}.{name} is `{entry.target.replace(':', '.')}`", False)


def classify_module_path(qualified: str, imported_module: bool = False):
    """`tensorflow.python...` / `.core...` / `.examples...`: a TF 1 path the TF1 world puts back, or, for
    the module of an import statement (`imported_module`), a module TensorFlow 2 removed. Names
    below an existing module are attributes, which are not checked statically."""
    for path, what in WORLD_PATHS.items():
        if qualified == path or qualified.startswith(path + "."):
            return _world(f"TensorFlow 2 removed it; here it is {what}")
    if qualified in WORLD_PACKAGES or not imported_module or module_exists(qualified):
        return None
    return ("error", f"TensorFlow {tf_api_names.VERSION} has no module {qualified} (ModuleNotFoundError)", True)
