"""Shared helpers of the compat tests: activation that is always undone, and running the CLI."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import npurun.compat as compat

from . import tf215_env

SCRIPTS = Path(__file__).parent / "scripts"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _never_leave_active():
    yield
    compat.deactivate()


@pytest.fixture
def single_process(monkeypatch):
    """A single chief process: no cluster or rank environment from the machine running the tests."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE"):
        monkeypatch.delenv(name, raising=False)


def estimator_class():
    """tf.estimator.Estimator as npurun's compatibility layer gives it (imported when a test needs it)."""
    from npurun.tf_estimator import Estimator

    return Estimator


@pytest.fixture
def active():
    compat.activate()
    yield compat
    compat.deactivate()


def run_compat(*args, cwd=None, timeout=600, env=None):
    """`python -m npurun.compat ARGS` (the same handlers as `npurun run|migrate|check`) in a subprocess.
    `env` entries replace the defaults here; an entry of None removes the variable (the user's environment
    without TF_CPP_MIN_LOG_LEVEL: `env={"TF_CPP_MIN_LOG_LEVEL": None}`)."""
    environment = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2")
    environment.update(env or {})
    environment = {key: value for key, value in environment.items() if value is not None}
    return subprocess.run([sys.executable, "-m", "npurun.compat", *map(str, args)], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def tf215_python():
    try:
        return tf215_env.ensure()
    except RuntimeError as error:
        pytest.fail(f"TensorFlow 2.15 reference environment unavailable: {error}")


@pytest.fixture(autouse=True)
def _npu_device_environment_restored():
    """npu_device's runtime writes TF_XLA_FLAGS / XLA_FLAGS & co. into os.environ for the rest of a script's
    process; a test that applies it in this process must not hand them to later tests' child processes."""
    yield
    runtime = sys.modules.get("npurun.adapter.npu_device.runtime")
    if runtime is not None:
        runtime.reset_environment()
