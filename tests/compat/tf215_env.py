"""The reference environment: TensorFlow 2.15 with its own `tf.estimator`, in a cached venv.

Created on first use (the test's setup) and reused afterwards. It lives outside the repository
(`~/.cache/npurun-bench/tf215`, shared with the benchmarks; `NPURUN_TF215_VENV` overrides) and is
usable only once its `.npurun-ready` stamp exists, so an interrupted install is redone, not trusted.
Run this file directly to create it ahead of time.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGES = ["tensorflow-cpu==2.15.1", "tensorflow-estimator==2.15.0", "scikit-learn"]
STAMP = ".npurun-ready"


def venv_dir() -> Path:
    return Path(os.environ.get("NPURUN_TF215_VENV", Path.home() / ".cache" / "npurun-bench" / "tf215"))


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _base_python() -> str:
    """An interpreter TensorFlow 2.15 has wheels for (CPython 3.9 to 3.11)."""
    candidates = [sys.executable] + [shutil.which(f"python3.{minor}") for minor in (11, 10, 9)]
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] <= (3, 11) and "
                                "sys.version_info[:2] >= (3, 9))"], capture_output=True, text=True)
        if probe.stdout.strip() == "True":
            return candidate
    raise RuntimeError("TensorFlow 2.15 needs Python 3.9 to 3.11 and none was found (tried this interpreter and "
                       "python3.11 / python3.10 / python3.9 on PATH)")


def _usable(venv: Path) -> bool:
    python = _python(venv)
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", "import tensorflow as tf, sklearn; assert tf.__version__.startswith('2.15'); "
                            "tf.estimator.Estimator"], capture_output=True, text=True)
    return probe.returncode == 0


def ensure(log=sys.stderr) -> Path:
    """The Python of the TF 2.15 venv, creating it if needed; RuntimeError saying why if it cannot be made."""
    venv = venv_dir()
    if (venv / STAMP).exists() and _python(venv).exists():
        return _python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = []
    if not _python(venv).exists():
        steps.append([_base_python(), "-m", "venv", str(venv)])
    steps.append([str(_python(venv)), "-m", "pip", "install", "--quiet", *PACKAGES])
    for step in steps:
        print("tf215 venv:", " ".join(step), file=log)
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"could not create the TensorFlow 2.15 reference venv at {venv}: "
                               f"`{' '.join(step)}` exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    if not _usable(venv):
        raise RuntimeError(f"the TensorFlow 2.15 reference venv at {venv} was installed but cannot import "
                           f"tensorflow 2.15 with tf.estimator and scikit-learn")
    (venv / STAMP).write_text(" ".join(PACKAGES) + "\n")
    return _python(venv)


if __name__ == "__main__":
    print(ensure())
