"""`npurun run script.py [args]`: run an Ascend adapter script unmodified, with the compat layer active.

The script runs as `__main__` (as `python script.py args` would run it): `sys.argv` is
`[script.py, *args]`, its directory is first on `sys.path`, and `npurun.compat.activate()` is in effect
for the whole run, so `npu_bridge` / `hccl` imports, `tf.estimator` and `tf.compat.v1.layers` resolve to
npurun. Its exit status is the script's.

Which TensorFlow the script's `import tensorflow` gives is decided per script (`script_tf_api`):
A script that imports `npu_device` (the adapter's TensorFlow 2 package; itself or a local module it imports)
is TensorFlow 2 code: it keeps TensorFlow 2's API, eager by default (`npu_device.compat.enable_v1()` turns
TensorFlow 1 behaviour on, as on Ascend). Other Ascend adapter scripts are TensorFlow 1.15 code, so a script that imports the adapter (`npu_bridge`,
`hccl`) or uses a name only TensorFlow 1 has (`tf.Session`, `tf.flags`, `tf.contrib`, ...; found
statically by `npurun check`, over the script and its local modules) gets TensorFlow 1's API in graph
mode (`npurun.tf1.world`). Any other script, such as a classic `tf.estimator` script written for
TensorFlow 2.x, keeps TensorFlow 2 (eager by default, `tf.estimator` from npurun). NPURUN_TF_API=1 or
2 forces the choice. npurun's own log (logger "npurun": loss and step, steps per
second, evaluation results) is shown at INFO level on stderr, as `npurun train` shows it, unless the
script or the environment configured that logger already. With no rank environment (RANK_ID,
RANK_SIZE, RANK_TABLE_FILE, TF_CONFIG all unset) the script sees RANK_SIZE=1 and RANK_ID=0, as
Ascend's one-device launch scripts export them; in a one-rank run ASCEND_DEVICE_ID, DEVICE_ID,
DEVICE_INDEX and RANK_INDEX (the server's index), when unset, are 0, as those scripts export them.
Python processes the script starts get its world too (`_child_environment`; NPURUN_CHILD_WORLD=off: not).
"""
from __future__ import annotations

import contextlib
import logging
import os
import runpy
import sys

from .check.npu_device_scripts import TF_API_ENV  # one name for the variable: check reads it too
from .run_environment import rank_defaults


def script_tf_api(path: str) -> int:
    """1 if the script at `path` is run in the TensorFlow 1 world, else 2 (see the module doc)."""
    forced = os.environ.get(TF_API_ENV, "").strip().lower()
    if forced in ("1", "2"):
        return int(forced)
    if forced not in ("", "auto"):
        raise ValueError(f"{TF_API_ENV}={forced!r}: allowed: 1 (TensorFlow 1's API), 2 (TensorFlow 2's) or auto")
    from .check import check_file
    from .check.tensorflow import TF1_WORLD

    try:
        if _imports_npu_device(path, set()):
            return 2
        if _adapter_or_contrib(path, set()):
            return 1
        findings = check_file(path)
    except (SyntaxError, UnicodeDecodeError):
        return 2  # the script's own error shows when it runs
    return 1 if any(f.section == "adapter" or f.status == TF1_WORLD for f in findings) else 2


def _is_npu_device_script(path: str) -> bool:
    """An npu_device script (TF 2.x era): its standalone `import keras` is Keras 2 (tf-keras) under npurun run."""
    try:
        return _imports_npu_device(path, set())
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False


def _imports_npu_device(path: str, seen: set) -> bool:
    """Whether the script or a local module it imports imports `npu_device` (check's reading of it)."""
    from .check.npu_device_scripts import imports_npu_device
    from .script_guard import ScriptRefused

    try:
        return imports_npu_device(path, seen)
    except ScriptRefused:
        return False  # too large / deep to read: the script's own error shows when it runs


def _adapter_or_contrib(path: str, seen: set) -> bool:
    """Whether the script or a local module it imports (next to it) imports `npu_bridge`, `hccl` or
    `tensorflow.contrib`, or reads a `.contrib` attribute (`tf.contrib`, however it is used after)."""
    import ast

    seen.add(path)
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    modules += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    if any(module.partition(".")[0] in ("npu_bridge", "hccl") or module.startswith("tensorflow.contrib")
           for module in modules):
        return True
    if any(isinstance(node, ast.Attribute) and node.attr == "contrib" and isinstance(node.value, ast.Name)
           for node in ast.walk(tree)):
        return True
    here = os.path.dirname(path)
    for module in modules:
        local = os.path.join(here, *module.split(".")) + ".py"
        if local not in seen and os.path.isfile(local) and _adapter_or_contrib(local, seen):
            return True
    return False


def run_module(name: str, args=()) -> int:
    """Run module `name` as __main__ with `args`, as `python -m name args` does (the current directory first on
    sys.path; a package runs its __main__). Launch scripts of ~20 ModelZoo folders start training so
    (`python3 -m albert.run_pretraining`, `python -m trainer.task`)."""
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{name}.__main__")
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path.pop(0)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        print(f"npurun run: no module named {name} (from {os.getcwd()})", file=sys.stderr)
        return 2
    return run_script(spec.origin, args, module=name)


def run_script(path: str, args=(), module: str = None) -> int:
    """Run `path` as __main__ with `args`; the exit status it ends with (0 if it just returns). With
    `module`, `path` is that module's file and it runs as `python -m module` runs it."""
    from ..adapter import active

    path = os.path.abspath(path)
    if not os.path.isfile(path):
        print(f"npurun run: no such script: {path}", file=sys.stderr)
        return 2
    tf1 = script_tf_api(path) == 1
    keras2 = not tf1 and _is_npu_device_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *args]
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(path))
    try:
        environment = {**_script_environment(), **_child_environment(tf1, keras2)}
        with _environment_defaults(environment), active(graph_mode=tf1, tf1=tf1, keras2=keras2), _npurun_log():
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(path, run_name="__main__")
    except Exception as error:  # noqa: BLE001 - the script's own exception, reported as such
        from ..reporting import debug_wanted, print_script_exception

        if debug_wanted():
            raise
        print_script_exception(error, path)
        return 1
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def prepare_process() -> None:
    """For `npurun run`, before the command imports TensorFlow: what TensorFlow reads only at its import.

    TensorFlow picks the package behind `tf.keras` and the `tensorflow.keras` module path when it is
    imported (TF_USE_LEGACY_KERAS), and the command imports it before the script runs; set later, as
    `_script_environment` does for an in-process run, the script would get Keras 3. The command's process
    is the script's, so the setting stays for it; an explicit setting is kept."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")


def start_run_process() -> None:
    """What `npurun run` (and `python -m npurun.compat run`) does before the script: the settings TensorFlow
    reads at its import, TensorFlow's native noise filtered for the whole process, and TensorFlow imported
    without its start-up banner (the script's own `import tensorflow` then finds it imported)."""
    from .. import logs

    prepare_process()
    logs.filter_native_stderr_for_process()
    logs.show_npurun_warnings_plainly()
    logs.import_tensorflow()


def _script_environment() -> dict:
    """Environment variables a script run here gets when they are not set already."""
    defaults = {}
    # tf.keras as the scripts run here knew it: Keras 2, from tf-keras. TensorFlow 1 scripts had nothing else, and
    # tf.estimator code is TensorFlow <= 2.15 code, whose tf.keras was Keras 2 (layer names counted per graph,
    # updates and regularisation losses in graph collections). Read when a script first uses tf.keras: the whole
    # process is the script's here. An explicit setting is kept.
    if "TF_USE_LEGACY_KERAS" not in os.environ:
        defaults["TF_USE_LEGACY_KERAS"] = "1"
    defaults.update(rank_defaults())  # RANK_SIZE=1 / RANK_ID=0 and device 0 in a one-rank run
    return defaults


CHILD_WORLD_ENV = "NPURUN_CHILD_WORLD"
_CHILD_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_site")


def _child_environment(tf1: bool, keras2: bool) -> dict:
    """The script's world for the Python processes it starts: `child_site/sitecustomize.py` first on PYTHONPATH
    activates it in each interpreter that has npurun (the `dask-worker` of 3 Vega folders, which unpickles and
    runs the trainer; `subprocess.run(["python3", "eval.py"])` or `os.system("python ...")` in 27 more). On
    Ascend those children had TensorFlow 1.15 as the script did. NPURUN_CHILD_WORLD=off turns it off; otherwise
    the variable is this script's world (an `npurun run` that a child starts decides for its own children)."""
    if os.environ.get(CHILD_WORLD_ENV, "").strip().lower() == "off":
        return {}
    settings = {CHILD_WORLD_ENV: "tf1" if tf1 else "keras2" if keras2 else "tf2"}
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if _CHILD_SITE not in entries:
        settings["PYTHONPATH"] = os.pathsep.join([_CHILD_SITE] + [entry for entry in entries if entry])
    return settings


@contextlib.contextmanager
def _environment_defaults(defaults: dict):
    """`defaults` set in os.environ for the run; afterwards each of them is as it was before (unset if
    it was unset), whatever the script did to it, so an in-process run (tests, notebooks) leaves no trace
    for later code and its child processes (a TF 2.15 oracle must not inherit TF_USE_LEGACY_KERAS)."""
    before = {name: os.environ.get(name) for name in defaults}
    os.environ.update(defaults)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _npurun_log():
    from ..logs import OnceStreamHandler, user_configured

    logger = logging.getLogger("npurun")
    if user_configured(logger):
        yield
        return
    # Silent for lines a root handler prints anyway (absl's, once the script calls app.run): once each.
    handler = OnceStreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:npurun:%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
