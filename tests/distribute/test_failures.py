"""Failures are bounded: a rank that never starts, and a rank killed mid-run, give clear errors in time.

Timeouts used: start-up (HCCL_CONNECT_TIMEOUT) 6 s; hccl_timeout 5 s (NPURunConfig(hccl_timeout=5)
through the session plan, or HCCL_EXEC_TIMEOUT=5). The
margin allowed on top is 5 s for the error to be raised (measured inside the surviving rank from
the moment the test killed its peer, or from the rank's start for start-up failures after
TensorFlow's import).
"""
import json
import time

import pytest

pytestmark = pytest.mark.slow

from .conftest import Ranks

MARGIN = 5.0


@pytest.mark.parametrize("n, missing", [(2, 1), (3, 0)], ids=["follower-missing", "leader-missing"])
def test_rank_that_never_starts_is_a_startup_error(n, missing, out):
    extra = {"all": {"HCCL_CONNECT_TIMEOUT": "6"}}
    results = Ranks("steps.py", n, out, extra=extra, skip={missing}).wait(timeout=90)
    for result in results:
        assert result.returncode == 1, result.stderr[-3000:]
        report = result.results(out)
        assert report["type"] == "StartupTimeoutError"
        assert f"rank {missing} (127.0.0.1:" in report["message"]
        assert "did not start within the start-up timeout of 6 s (HCCL_CONNECT_TIMEOUT)" in report["message"]
        # started counts from after TensorFlow's import: the wait itself is bounded by the timeout
        assert report["raised_at"] - report["started"] <= 6 + MARGIN


@pytest.mark.parametrize("n, victim, how", [(2, 1, "HCCL_TIMEOUT_OPTION"), (3, 0, "HCCL_EXEC_TIMEOUT")],
                         ids=["follower-killed-option", "leader-killed-env"])
def test_killed_rank_makes_the_others_fail_within_hccl_timeout(n, victim, how, out):
    # hccl_timeout=5 from NPURunConfig (through the session plan), or from HCCL_EXEC_TIMEOUT
    extra = {"all": {how: "5", "HCCL_CONNECT_TIMEOUT": "60"}}
    ranks = Ranks("steps.py", n, out, extra=extra)
    # wait until the victim has done a few steps, so every rank is past start-up
    ranks.wait_for_line(victim, "step ", count=5)
    ranks.kill(victim)
    killed_at = time.time()
    results = [r for r in ranks.wait(timeout=90) if r.rank != victim]
    assert len(results) == n - 1
    for result in results:
        assert result.returncode == 1, result.stderr[-3000:]
        report = json.loads((out / f"rank{result.rank}.json").read_text())
        assert report["type"] == "CollectiveTimeoutError", report
        assert f"rank {result.rank} of {n}: a collective operation" in report["message"]
        assert report["raised_at"] - killed_at <= 5 + MARGIN, report
