"""The TF1 world of `npurun run` for the Python processes a script starts (`npurun.tools.run`).

`npurun run` puts this directory first on PYTHONPATH and names the script's world in NPURUN_CHILD_WORLD
("tf1", "tf2" or "keras2") for its child processes; Python imports `sitecustomize` at start-up, so a
child interpreter that has npurun (a `dask-worker` of the Vega trees, `subprocess.run(["python3",
"eval.py"])`, a spawned multiprocessing worker) activates the same compat layer before its own code runs,
as on Ascend, where TensorFlow 1.15 was the system's. An interpreter without npurun, npurun's own command
(`npurun run other.py` decides other.py's world) or any other value of the variable ("off") is left as it
is. The `sitecustomize` this file shadows on sys.path, if any, runs after it.
"""
import os
import sys

_WORLDS = {"tf1": dict(graph_mode=True, tf1=True, keras2=False),
           "tf2": dict(graph_mode=False, tf1=False, keras2=False),
           "keras2": dict(graph_mode=False, tf1=False, keras2=True)}


def _npurun_itself() -> bool:
    """Whether this interpreter runs npurun's own command (`npurun run other.py`, `python -m npurun.compat ...`),
    which decides the world of the script it runs."""
    args = iter(getattr(sys, "orig_argv", [])[1:])
    for arg in args:
        if arg == "-m":
            return next(args, "").partition(".")[0] == "npurun"
        if arg == "-c" or not arg.startswith("-"):
            return os.path.basename(arg) == "npurun"
    return False


def _activate():
    world = _WORLDS.get(os.environ.get("NPURUN_CHILD_WORLD", ""))
    if world is None or _npurun_itself():
        return
    try:
        from npurun.adapter import activate
    except ImportError:  # another interpreter, without npurun
        return
    activate(**world)


def _run_shadowed():
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path, this = sys.path[:], sys.modules.pop(__name__, None)
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401 - the next one on sys.path
    except ImportError as error:
        if error.name != "sitecustomize":
            raise
        if this is not None:
            sys.modules[__name__] = this
    finally:
        sys.path[:] = saved_path


if __name__ == "sitecustomize":  # as Python's start-up imports it (not as npurun.tools.child_site.sitecustomize)
    _activate()
    _run_shadowed()
