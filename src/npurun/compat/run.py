"""`npurun run script.py [args]`: run an Ascend adapter script unmodified, with the compat layer active.

The script runs as `__main__` (as `python script.py args` would run it): `sys.argv` is
`[script.py, *args]`, its directory is first on `sys.path`, and `npurun.compat.activate()` is in effect
for the whole run, so `npu_bridge` / `hccl` imports, `tf.estimator` and `tf.compat.v1.layers` resolve to
npurun, and the script's `import tensorflow` gives TensorFlow 1's API in graph mode (`npurun.compat.tf1`). Its exit status is the script's. npurun's own log (logger "npurun": loss and step, steps per
second, evaluation results) is shown at INFO level on stderr, as `npurun train` shows it, unless the
script or the environment configured that logger already. With no rank environment (RANK_ID,
RANK_SIZE, RANK_TABLE_FILE, TF_CONFIG all unset) the script sees RANK_SIZE=1 and RANK_ID=0, as
Ascend's one-device launch scripts export them.
"""
from __future__ import annotations

import contextlib
import logging
import os
import runpy
import sys


_RANK_VARIABLES = ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG")
_ONE_RANK = {"RANK_SIZE": "1", "RANK_ID": "0"}


def run_script(path: str, args=()) -> int:
    """Run `path` as __main__ with `args`; the exit status it ends with (0 if it just returns)."""
    from . import active

    path = os.path.abspath(path)
    if not os.path.isfile(path):
        print(f"npurun run: no such script: {path}", file=sys.stderr)
        return 2
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(path))
    # tf.keras as TensorFlow 1 scripts knew it (Keras 2, from tf-keras; Keras 3 has no graph mode). Read when
    # a script first uses tf.keras: the whole process is the script's here. An explicit setting is kept.
    legacy_keras_set_here = "TF_USE_LEGACY_KERAS" not in os.environ
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    # Ascend's 1-device launch scripts export RANK_SIZE=1 / RANK_ID=0 and many scripts read them bare
    # (`int(os.getenv('RANK_SIZE'))`: 63 ModelZoo folders). With no rank environment at all, a run is
    # that one rank; `npurun launch` and explicit settings are kept as they are.
    one_rank_set_here = not any(name in os.environ for name in _RANK_VARIABLES)
    if one_rank_set_here:
        os.environ.update(_ONE_RANK)
    try:
        with active(graph_mode=True), _npurun_log():
            runpy.run_path(path, run_name="__main__")
    except Exception as error:  # noqa: BLE001 - the script's own exception, reported as such
        from ..cli_errors import debug_wanted, print_script_exception

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
        if legacy_keras_set_here:  # run_script called in-process (tests, notebooks) leaves no trace
            os.environ.pop("TF_USE_LEGACY_KERAS", None)
        if one_rank_set_here:
            for name in _ONE_RANK:
                os.environ.pop(name, None)
    return 0


@contextlib.contextmanager
def _npurun_log():
    from ..logs import user_configured

    logger = logging.getLogger("npurun")
    if user_configured(logger):
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:npurun:%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
