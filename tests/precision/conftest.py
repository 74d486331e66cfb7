"""Fixtures for the precision tests.

TensorFlow decides once per process, when it starts, whether oneDNN is on (TF_ENABLE_ONEDNN_OPTS;
on by default only on CPUs with AVX512_VNNI/BF16, AVX_VNNI or AMX), and the bf16 rewrite needs it.
A test that needs oneDNN takes the `onednn` fixture: in a process where oneDNN is off, the fixture
runs the test's whole module once in a child pytest with TF_ENABLE_ONEDNN_OPTS=1 and reports each
test's outcome there; the test body returns early when the fixture returns True. Nothing is
skipped either way.
"""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

CHILD_ENV = "NPURUN_PRECISION_ONEDNN_CHILD"


def _outcomes(report_path) -> dict:
    outcomes = {}
    for case in ET.parse(report_path).getroot().iter("testcase"):
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        if problems:
            outcomes[case.get("name")] = f"{problems[0].tag}: {problems[0].get('message')}\n{problems[0].text or ''}"
        else:
            outcomes[case.get("name")] = "passed"
    return outcomes


@pytest.fixture(scope="module")
def _onednn_module_run(request, tmp_path_factory):
    from npurun.precision.modes import onednn_enabled

    if onednn_enabled():
        return None
    if os.environ.get(CHILD_ENV):
        pytest.fail("TF_ENABLE_ONEDNN_OPTS=1 did not turn oneDNN on in the child process")
    report = tmp_path_factory.mktemp("onednn_child") / "report.xml"
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1", **{CHILD_ENV: "1"})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(request.path),
                           f"--junitxml={report}"], env=env, cwd=str(request.config.rootpath),
                          capture_output=True, text=True, timeout=3000)
    output = (proc.stdout[-6000:] + "\n" + proc.stderr[-3000:]).strip()
    if not report.exists():
        pytest.fail(f"the oneDNN child pytest wrote no report (exit {proc.returncode}):\n{output}")
    return _outcomes(report), output


@pytest.fixture
def onednn(request, _onednn_module_run) -> bool:
    """False: oneDNN is on here, run the body. True: the body already passed in a oneDNN child process."""
    if _onednn_module_run is None:
        return False
    outcomes, output = _onednn_module_run
    outcome = outcomes.get(request.node.name, "not run")
    if outcome != "passed":
        pytest.fail(f"{request.node.name} in the oneDNN child process: {outcome}\n--- child output ---\n{output}")
    return True


# ---- the machine policy: features fixture and the forcing switch ----------------------------------------

@pytest.fixture
def cpu_features(monkeypatch):
    """Pretend this CPU has the given features: `cpu_features(amx_bf16=True)`; `cpu_features()` for none.

    Also forgets which fallback warnings were given, so each test sees its own first warning.
    """
    from npurun.precision import policy

    monkeypatch.setattr(policy, "_warned", set())
    monkeypatch.delenv(policy.FORCE_ENV, raising=False)
    monkeypatch.delenv(policy.SUBSTITUTE_ENV, raising=False)

    def pretend(**flags):
        features = policy.CpuFeatures(**flags)
        monkeypatch.setattr(policy, "cpu_features", lambda: features)
        return features

    pretend()
    return pretend


@pytest.fixture
def force_low_precision(monkeypatch, cpu_features):
    """NPURUN_FORCE_LOW_PRECISION=1 on a CPU without bf16/fp16 hardware: the real low-precision graph."""
    from npurun.precision import policy

    monkeypatch.setenv(policy.FORCE_ENV, "1")
