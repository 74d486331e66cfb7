"""Preemption in parameter-server mode (1 ps, 2 asynchronous workers): a signal to any worker stops
every worker (a shared stop flag on the ps, read with every run; see distribute/stop_flag.py), the
chief saves, and a ps task that is signalled keeps serving until the chief has exited (the chief's
save reads the shared variables from it). Every task exits 143 with one line."""
import os
import re
import signal

import pytest
import tensorflow as tf

from .conftest import Ranks

pytestmark = pytest.mark.slow


def test_a_signal_to_a_non_chief_worker_stops_every_task_and_the_chief_saves(out):
    ranks = Ranks("estimator_ps_preempt.py", 2, out, args=[20], ps=1, extra={"all": {"HCCL_CONNECT_TIMEOUT": "60"}})
    ranks.wait_for_line(1, "signalled")
    ps_pid = ranks.pids()["rank2"]  # the ps task: signalled as the worker stops, while the chief may still save
    os.kill(ps_pid, signal.SIGTERM)
    chief, worker, ps = ranks.wait(timeout=120)
    for result in (chief, worker, ps):
        assert result.returncode == 143, f"task {result.rank}: {result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr
    saved = re.search(r"^SIGTERM \(received by another rank\): training stopped at global step (\d+); saved (\S+) "
                      r"with the input position; exiting with status 143$", chief.stderr, re.M)
    assert saved, chief.stderr[-3000:]
    assert saved.group(2) == f"{out}/model/model.ckpt-{saved.group(1)}"
    assert re.search(r"^SIGTERM: training stopped at global step \d+; this process saves no checkpoints",
                     worker.stderr, re.M), worker.stderr[-3000:]
    assert re.search(r"^SIGTERM: /job:ps/replica:0/task:0 stopped serving the parameters \(the chief has exited\); "
                     r"exiting with status 143$", ps.stderr, re.M), ps.stderr[-3000:]
    assert tf.train.load_variable(saved.group(2), "global_step") == int(saved.group(1))
