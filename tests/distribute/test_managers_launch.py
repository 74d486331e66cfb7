"""Two ranks started the way Slurm's srun and torchrun start them (their environment variables only,
no RANK_ID / RANK_SIZE / TF_CONFIG), on loopback: they find each other, train data-parallel to identical
weights, and only the chief (the manager's rank 0) is the chief."""
import json
import os
import socket

import pytest

from .conftest import assert_ok, free_port_range, run_ranks

pytestmark = pytest.mark.slow
NO_NPURUN = {"RANK_ID": "", "RANK_SIZE": "", "TF_CONFIG": "", "RANK_TABLE_FILE": "", "HCCL_CONNECT_TIMEOUT": "30"}


def check(out, results):
    assert_ok(results)
    records = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    assert [(r["rank"], r["size"], r["local"], r["is_chief"]) for r in records] == [(0, 2, 0, True), (1, 2, 1, False)]
    assert records[0]["weights_hex"] == records[1]["weights_hex"]  # started from different initialisations
    assert records[0]["target"].startswith("grpc://127.0.0.1:") and records[0]["target"] != records[1]["target"]


def test_srun_environment_launches_two_ranks(out):
    base = free_port_range(2)
    extra = {"all": dict(NO_NPURUN, SLURM_STEP_ID="0", SLURM_JOB_ID="7", SLURM_STEP_NUM_TASKS="2",
                         SLURM_NTASKS="2", SLURM_STEP_NODELIST="cn[07]", SLURM_JOB_NODELIST="cn[07]",
                         SLURM_STEP_TASKS_PER_NODE="2", SLURM_NODEID="0", NPURUN_BASE_PORT=str(base))}
    for r in range(2):
        extra[r] = {"SLURM_PROCID": str(r), "SLURM_LOCALID": str(r)}
    check(out, run_ranks("manager_train.py", 2, out, extra=extra, tf_config=False, timeout=90))


def test_torchrun_environment_launches_two_ranks(out):
    base = free_port_range(2)
    extra = {"all": dict(NO_NPURUN, WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                         MASTER_PORT="29500", GROUP_RANK="0", NPURUN_BASE_PORT=str(base))}
    for r in range(2):
        extra[r] = {"RANK": str(r), "LOCAL_RANK": str(r)}
    check(out, run_ranks("manager_train.py", 2, out, extra=extra, tf_config=False, timeout=90))


def test_resuming_without_a_shared_model_dir_is_refused(out):
    """Each rank has its own model_dir (as with a local disk per host) and the chief's holds a checkpoint:
    the chief stops within the start-up timeout, before restoring, saying a shared model_dir is required
    for resume. (A first run with a model_dir per rank is not refused: test_target.py trains that way.)"""
    from .conftest import Ranks

    (out / "model0").mkdir()
    (out / "model0" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-6"\n')
    ranks = Ranks("estimator_no_tf_config.py", 2, out, extra={"all": {"HCCL_CONNECT_TIMEOUT": "6"}})
    results = ranks.wait(90)
    chief = results[0]
    assert chief.returncode != 0
    assert "SharedModelDirError: rank 0 of 2 (the chief) resumes from the checkpoint in model_dir" in chief.stderr
    assert "rank 1 did not show up in it" in chief.stderr and "is required for resume" in chief.stderr
    assert results[1].returncode != 0  # its start-up then fails: the chief is gone
    assert [n for n in os.listdir(out / "model1" / ".npurun_shared") if n.startswith("rank1.")]



@pytest.mark.skipif(os.geteuid() != 0, reason="a private mount (unshare + tmpfs) needs root")
def test_a_rank_that_does_not_see_the_chiefs_model_dir_under_its_path_is_refused_at_start_up(out):
    """A first run (no checkpoint): both ranks are given the same model_dir path, but rank 1 sees another directory
    there (a private tmpfs over it). Rank 1 stops at the start-up with SharedModelDirError naming its rank, host,
    the path and that a shared model_dir is required, and rank 0 stops naming rank 1; before, both trained on (and
    the job could never resume)."""
    from .conftest import Ranks

    shared = out / "shared"
    shared.mkdir()
    ranks = Ranks("estimator_no_tf_config.py", 2, out,
                  extra={"all": {"HCCL_CONNECT_TIMEOUT": "10", "MODEL_DIR": str(shared)}, 1: {"PRIVATE_MODEL_DIR": "1"}})
    chief, other = ranks.wait(120)
    assert other.returncode != 0, other.stderr[-3000:]
    assert f"SharedModelDirError: rank 1 of 2 (host {socket.gethostname()}, 127.0.0.1:" in other.stderr, \
        other.stderr[-3000:]
    assert f"model_dir {str(shared)!r} is the chief's model_dir path, but this host does not see" in other.stderr
    assert "A shared model_dir is required" in other.stderr
    assert chief.returncode != 0 and "SharedModelDirError: rank 0 of 2" in chief.stderr, chief.stderr[-3000:]
    assert "rank 1 is given the chief's model_dir path" in chief.stderr
    assert not (out / "rank0.json").exists() and not (out / "rank1.json").exists()  # nobody trained
