"""SIGTERM to every rank of a data-parallel NPUEstimator job (as a scheduler preempts): the chief
saves a checkpoint at the step it reached, every rank exits with status 143, none hangs (a rank
whose peer stopped a run earlier fails its collective within hccl_timeout=5 s, still 143)."""
import os
import re
import signal
import time

import pytest
import tensorflow as tf

from .conftest import Ranks

pytestmark = pytest.mark.slow


def test_sigterm_to_every_rank_chief_saves_and_every_rank_exits_143(out):
    ranks = Ranks("estimator_preempt.py", 2, out, extra={"all": {"HCCL_CONNECT_TIMEOUT": "60"}})
    for rank in (0, 1):
        ranks.wait_for_line(rank, "step ", count=5)
    for pid in ranks.pids().values():
        os.kill(pid, signal.SIGTERM)
    signalled = time.monotonic()
    results = ranks.wait(timeout=90)
    assert time.monotonic() - signalled < 5 + 15  # hccl_timeout plus a margin for a loaded machine
    for result in results:
        assert result.returncode == 143, f"rank {result.rank}: {result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr
    chief = results[0].stderr
    match = re.search(r"SIGTERM: training stopped at global step (\d+); saved (\S+) with the input position; "
                      r"exiting with status 143", chief)
    assert match, chief[-3000:]
    step = int(match.group(1))
    assert step >= 5
    assert match.group(2) == os.path.join(str(out), "model", f"model.ckpt-{step}")
    assert tf.train.load_checkpoint(match.group(2)).get_tensor("global_step") == step
    other = results[1].stderr
    assert "SIGTERM: training stopped at global step" in other or "a peer rank stopped before this one" in other
