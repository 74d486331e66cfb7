"""SIGTERM to every rank of a data-parallel NPUEstimator job (as a scheduler preempts): every rank
exits with status 143 and none hangs (a rank whose peer stopped a run earlier fails its collective
within hccl_timeout=5 s, still 143); the chief saves a checkpoint at the step it reached, unless
its own run in flight was the one waiting for a peer that had already stopped (the ranks do not
agree on a stopping step: it then says so and names the newest checkpoint)."""
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
    saved = re.search(r"SIGTERM: training stopped at global step (\d+); saved (\S+) with the input position; "
                      r"exiting with status 143", chief)
    if saved:
        step = int(saved.group(1))
        assert step >= 5
        assert saved.group(2) == os.path.join(str(out), "model", f"model.ckpt-{step}")
        assert tf.train.load_checkpoint(saved.group(2)).get_tensor("global_step") == step
    else:
        # The other rank stopped one run earlier and the chief's run in flight waited for it: no
        # exact checkpoint can be written for that run; the chief says so and names the newest.
        assert "SIGTERM: a peer rank stopped before this one" in chief, chief[-3000:]
        assert re.search(r"the newest is \S+model\.ckpt-\d+\); exiting with status 143", chief), chief[-3000:]
    other = results[1].stderr
    assert "SIGTERM: training stopped at global step" in other or "a peer rank stopped before this one" in other
