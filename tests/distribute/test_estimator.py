"""NPUEstimator through `npurun launch -n 2`: the plan contributor adds the broadcast and start-up
hooks, NPUDistributedOptimizer averages gradients inside the device loop (iterations_per_loop=2),
only the chief writes checkpoints, and the result equals one process on the combined batch.

Model: scripts/estimator_train.py (MLP 4-8-1, tanh, MSE, SGD 0.1), 8 steps of a global batch of 16.
Tolerance against the single process (iterations_per_loop=1): rtol 1e-5, atol 1e-6.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = str(Path(__file__).parent / "scripts" / "estimator_train.py")
STEPS, GLOBAL_BATCH = 8, 16


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


@pytest.mark.slow
def test_estimator_two_ranks_through_the_launcher(tmp_path):
    dist, single = tmp_path / "dist", tmp_path / "single"
    dist.mkdir()
    single.mkdir()
    launch = subprocess.Popen([sys.executable, "-m", "npurun.distribute.launch", "-n", "2", "--startup-timeout", "60",
                               SCRIPT, str(dist), "2", str(STEPS), str(GLOBAL_BATCH)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    # the single-process reference meanwhile (rank 0's initialisation, the whole global batch)
    reference = subprocess.run([sys.executable, SCRIPT, str(single), "1", str(STEPS), str(GLOBAL_BATCH)],
                               capture_output=True, text=True, env=clean_env(), timeout=180)
    out, err = launch.communicate(timeout=180)
    assert launch.returncode == 0, err[-5000:]
    assert reference.returncode == 0, reference.stderr[-3000:]
    assert "[rank 0] rank 0 done" in out and "[rank 1] rank 1 done" in out
    reports = [json.loads((dist / f"rank{r}.json").read_text()) for r in range(2)]
    # different initialisations, then bit-identical weights after training
    assert reports[0]["initial"] != reports[1]["initial"]
    assert reports[0]["final_hex"] == reports[1]["final_hex"]
    # chief-only checkpoints
    assert [r["is_chief"] for r in reports] == [True, False]
    assert any(name.startswith("model.ckpt") for name in os.listdir(dist / "model0"))
    assert not (dist / "model1").exists() or not any(n.startswith("model.ckpt") for n in os.listdir(dist / "model1"))
    expected = json.loads((single / "rank0.json").read_text())["final"]
    for got, want in zip(reports[0]["final"], expected):
        np.testing.assert_allclose(np.array(got, np.float32), np.array(want, np.float32), rtol=1e-5, atol=1e-6)
    assert reports[0]["final"] != reports[0]["initial"]
    # the launcher's bind narrowing: each rank's servers listen on 127.0.0.1 only, none on a wildcard
    for report in reports:
        assert report["listening"], report
        for address in report["listening"]:
            assert address.rpartition(":")[0] in ("127.0.0.1", "::ffff:127.0.0.1"), report["listening"]
    assert "listen beyond loopback" not in err
