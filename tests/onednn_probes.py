"""Run probes under both oneDNN settings, whatever this machine's default is.

TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, when it is imported, so each setting needs its own
process. The probes of every module in `PROBE_MODULES` run in ONE child Python per setting (a
TensorFlow import costs seconds): each `probe_<name>(workdir)` function builds and runs a small graph
and returns JSON-able observations (executed op types, errors); files it writes stay in its workdir
for the test to read. The `both_onednn` fixture (tests/conftest.py) runs each setting once per session.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
SETTINGS = {"onednn-off": "0", "onednn-on": "1"}
# (directory added to sys.path, module name): the modules whose probe_* functions run.
PROBE_MODULES = (("debug", "debug.probes"), ("runtime", "probes"))

_CHILD = r"""
import importlib, json, os, sys, traceback
tests, out = sys.argv[1], sys.argv[2]
results = {}
import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port
results["__onednn__"] = bool(_pywrap_util_port.IsMklEnabled())
for folder, name in json.loads(sys.argv[3]):
    sys.path[:0] = [tests, os.path.join(tests, folder)] if folder == "runtime" else [tests]
    module = importlib.import_module(name)
    getattr(module, "setup", lambda: None)()
    for attr in sorted(dir(module)):
        if not attr.startswith("probe_"):
            continue
        workdir = os.path.join(out, folder, attr[len("probe_"):])
        os.makedirs(workdir, exist_ok=True)
        try:
            results[f"{folder}:{attr[len('probe_'):]}"] = {"value": getattr(module, attr)(workdir), "workdir": workdir}
        except Exception as error:  # the test decides whether an error was expected
            results[f"{folder}:{attr[len('probe_'):]}"] = {"raised": type(error).__name__, "workdir": workdir,
                                                        "message": str(error)[:3000],
                                                        "traceback": traceback.format_exc()[-3000:]}
with open(os.path.join(out, "results.json"), "w") as handle:
    json.dump(results, handle)
"""


class ProbeError(AssertionError):
    pass


class Probes:
    """The observations of one child process: `value(name)`, `raised(name)`, `workdir(name)`."""

    def __init__(self, setting: str, results: dict):
        self.setting = setting
        self.onednn = results.pop("__onednn__")
        self._results = results

    def _get(self, name: str) -> dict:
        if name not in self._results:
            raise ProbeError(f"no probe {name!r} ran; probes: {sorted(self._results)}")
        return self._results[name]

    def value(self, name: str):
        result = self._get(name)
        if "raised" in result:
            raise ProbeError(f"probe {name} ({self.setting}) raised {result['raised']}:\n{result['traceback']}")
        return result["value"]

    def raised(self, name: str) -> tuple[str, str]:
        """(exception type name, message) of a probe expected to fail."""
        result = self._get(name)
        if "raised" not in result:
            raise ProbeError(f"probe {name} ({self.setting}) did not raise; it returned {result['value']!r}")
        return result["raised"], result["message"]

    def workdir(self, name: str) -> str:
        return self._get(name)["workdir"]


def run(setting: str, out_dir: str, timeout: int = 900) -> Probes:
    """All probes in a fresh Python with TF_ENABLE_ONEDNN_OPTS=SETTINGS[setting]."""
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=SETTINGS[setting], TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", _CHILD, TESTS, str(out_dir), json.dumps(PROBE_MODULES)],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=str(out_dir))
    path = os.path.join(str(out_dir), "results.json")
    if proc.returncode != 0 or not os.path.exists(path):
        raise ProbeError(f"probe process ({setting}) failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                         f"{proc.stderr[-6000:]}")
    with open(path) as handle:
        probes = Probes(setting, json.load(handle))
    if probes.onednn != (SETTINGS[setting] == "1"):
        raise ProbeError(f"TF_ENABLE_ONEDNN_OPTS={SETTINGS[setting]} did not set oneDNN in the probe process")
    return probes
