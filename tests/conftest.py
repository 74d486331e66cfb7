"""Suite-wide rules.

A skipped test is not a passing test: under CI (CI=true) any skip fails the run, so a check that
cannot run on the CI machine is visible instead of silently green.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # op_names.py, onednn_probes.py


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    skipped = reporter.stats.get("skipped", [])
    if skipped and exitstatus == pytest.ExitCode.OK:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; skips fail CI", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def _onednn_probe_runs(tmp_path_factory):
    """One child process per setting, run when a test first asks for that setting, shared by all."""
    import onednn_probes

    runs = {}

    def run(setting):
        if setting not in runs:
            runs[setting] = onednn_probes.run(setting, tmp_path_factory.mktemp(setting))
        return runs[setting]

    return run


# Parametrised at function scope on purpose: a parametrised *session* fixture makes pytest regroup the
# tests that use it across directories, which ran tests/runtime (whose conftest switches the process to
# graph mode for the rest of the session) before the estimator tests that need eager execution.
@pytest.fixture(params=["onednn-off", "onednn-on"])
def both_onednn(request, _onednn_probe_runs):
    """The probes of tests/*/probes.py, observed in a child process with TF_ENABLE_ONEDNN_OPTS=0 and one
    with =1 (see onednn_probes.py): tests taking this fixture run under both settings on any machine."""
    return _onednn_probe_runs(request.param)
