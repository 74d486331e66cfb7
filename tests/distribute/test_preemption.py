"""Preemption of a 2-rank data-parallel NPUEstimator job: the ranks agree on the step to stop at.

One pair of ranks runs every phase below in order (workers/estimator_agree.py: each phase is one
train() call that a rank's own signal ends, so where the signal lands is counted in runs, not
timed). Rule under test (distribute/stop_flag.py): a rank signalled during run k, or between
runs k and k+1, raises its stop flag before run k+1; every rank sees the flag after run k+1 and
stops there; the chief saves that step with the input position; every rank logs one line and
ends with 143 (SIGTERM) / 130 (SIGINT); the next train() resumes from that step.
"""
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import Ranks

pytestmark = pytest.mark.slow

# name -> (phase, runs from the phase's start to the agreed stop, signal name); None: not stopped.
# `at` counts runs for "between" (after run `at`) and steps for "inside" (during step `at`).
PHASES = {
    "chief between runs": ({"model": "a", "steps": 40, "signals": {"0": ["between", 3, "SIGTERM"]}}, 4, "SIGTERM"),
    "non-chief between runs": ({"model": "a", "steps": 40, "signals": {"1": ["between", 5, "SIGTERM"]}}, 6,
                               "SIGTERM"),
    "non-chief during a run, SIGINT": ({"model": "a", "steps": 40, "signals": {"1": ["inside", 4, "SIGINT"]}}, 5,
                                       "SIGINT"),
    # Both ranks, as a scheduler preempting every rank: the earlier signal decides the step.
    "both ranks": ({"model": "a", "steps": 40,
                    "signals": {"0": ["between", 5, "SIGTERM"], "1": ["inside", 3, "SIGTERM"]}}, 4, "SIGTERM"),
    # During the chief's second checkpoint save of the phase (save_checkpoints_steps=3): stop one
    # run after the step being saved (the runs count is checked against the recorded step instead).
    "chief during a checkpoint save": ({"model": "a", "steps": 40, "save_every": 3,
                                        "signals": {"0": ["save", 2, "SIGTERM"]}}, None, "SIGTERM"),
    # iterations_per_loop=4: a run is a device loop of 4 steps; agreement once per loop.
    "loop: chief between loops": ({"model": "b", "ipl": 4, "steps": 40,
                                   "signals": {"0": ["between", 2, "SIGTERM"]}}, 3, "SIGTERM"),
    "loop: non-chief inside a loop": ({"model": "b", "ipl": 4, "steps": 40,
                                       "signals": {"1": ["inside", 6, "SIGTERM"]}}, 3, "SIGTERM"),
    "loop: both ranks": ({"model": "b", "ipl": 4, "steps": 40,
                          "signals": {"0": ["inside", 2, "SIGINT"], "1": ["between", 1, "SIGINT"]}}, 2, "SIGINT"),
    "loop: both ranks, the same run": ({"model": "b", "ipl": 4, "steps": 40,
                                        "signals": {"0": ["between", 1, "SIGTERM"], "1": ["between", 1, "SIGTERM"]}},
                                       2, "SIGTERM"),
}
# dataset.shard(2, rank) before a shuffle buffer: the ranks' input positions differ, so each
# non-chief rank saves its own at the stop (estimator/rank_input.py).
PHASES["sharded input: non-chief between runs"] = (
    {"model": "f", "sharded": True, "steps": 40, "signals": {"1": ["between", 3, "SIGTERM"]}}, 4, "SIGTERM")
PHASES["sharded input: chief inside a run"] = (
    {"model": "f", "sharded": True, "steps": 40, "signals": {"0": ["inside", 5, "SIGTERM"]}}, 6, "SIGTERM")
RESUME = [  # after the preempted phases: resume to a step, and the same step uninterrupted
    ("resume a", {"model": "a", "max_steps": 80}), ("reference a", {"model": "c", "max_steps": 80}),
    ("resume b", {"model": "b", "ipl": 4, "max_steps": 64}), ("reference b", {"model": "d", "ipl": 4, "max_steps": 64}),
    ("resume f", {"model": "f", "sharded": True, "max_steps": 30}),
    ("reference f", {"model": "g", "sharded": True, "max_steps": 30}),
]
KILLED = ("peer killed", {"model": "e", "last": True,
                          "signals": {"0": ["between", 3, "SIGTERM"], "1": ["kill", 3, None]}, "steps": 40})
HCCL_TIMEOUT = 5  # the worker's NPURunConfig(hccl_timeout=5)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("agree")
    phases = [dict(spec, name=name) for name, (spec, _, _) in PHASES.items()]
    phases += [dict(spec, name=name) for name, spec in RESUME] + [dict(KILLED[1], name=KILLED[0])]
    ranks = Ranks("estimator_agree.py", 2, out, args=[json.dumps(phases)],
                  extra={"all": {"HCCL_CONNECT_TIMEOUT": "60"}})
    results = ranks.wait(timeout=400)
    records = {}
    for result in results:
        path = out / f"rank{result.rank}.json"
        assert path.exists(), f"rank {result.rank} wrote no results: {result.stderr[-3000:]}"
        records[result.rank] = {phase["name"]: phase for phase in json.loads(path.read_text())}
    return out, results, records


def _stop_line(lines, signame):
    text = "\n".join(lines)
    found = re.findall(rf"^{signame}( \(received by another rank\))?: training stopped at global step (\d+); (.*)$",
                       text, re.M)
    assert len(found) == 1, text  # one line per rank
    return bool(found[0][0]), int(found[0][1]), found[0][2]


@pytest.mark.parametrize("name", list(PHASES))
def test_every_rank_stops_at_the_same_step_and_the_chief_saves_it(job, name):
    out, _, records = job
    spec, runs, signame = PHASES[name]
    chief, other = records[0][name], records[1][name]
    ipl = spec.get("ipl", 1)
    status = 143 if signame == "SIGTERM" else 130
    assert chief["code"] == status and other["code"] == status
    start = chief["start"]
    chief_peer, chief_step, chief_where = _stop_line(chief["lines"], signame)
    other_peer, other_step, other_where = _stop_line(other["lines"], signame)
    assert chief_step == other_step  # the agreement
    if runs is None:
        assert chief["fired_step"] is not None and chief_step == chief["fired_step"] + ipl
    else:
        assert chief_step == start + runs * ipl
    # Which rank says the signal came from another: exactly those whose own signal had not fired.
    fired = {rank for rank, (how, at, _) in spec["signals"].items()
             if how == "save" or (how == "between" and at < runs) or (how == "inside" and at <= (runs - 1) * ipl)}
    assert chief_peer == ("0" not in fired) and other_peer == ("1" not in fired)
    saved = f"{out}/{spec['model']}/model.ckpt-{chief_step}"
    assert chief_where == f"saved {saved} with the input position; exiting with status {status}"
    own = f"{out}/{spec['model']}/input-rank1/model.ckpt-{chief_step}"
    assert other_where == f"saved this rank's input position to {own} (the chief saves the checkpoint); exiting " \
                          f"with status {status}"
    assert chief["newest"] == saved and chief["global_step"] == chief_step  # that checkpoint, read back
    # One step per run: the flag rides in NPUDistributedOptimizer's gradient all-reduce; a device
    # loop's all-reduce is inside the loop, so the flag has its own all-reduce, once per loop.
    kind = "riding on the gradient all-reduce" if ipl == 1 else "own all-reduce"
    for record in (chief, other):
        assert f"The ranks agree when to stop: stop flag {kind}" in record["lines"]


def test_each_phase_resumes_where_the_previous_one_stopped(job):
    _, _, records = job
    chief = records[0]
    previous = {}
    for name, (spec, _, signame) in PHASES.items():
        model = spec["model"]
        if model in previous:
            assert chief[name]["start"] == previous[model], name
        previous[model] = _stop_line(chief[name]["lines"], signame)[1]
    for model in "abf":
        assert chief[f"resume {model}"]["start"] == previous[model]


@pytest.mark.parametrize("resumed,reference", [("resume a", "reference a"), ("resume b", "reference b"),
                                               ("resume f", "reference f")])
def test_resuming_after_preemptions_matches_an_uninterrupted_run_bit_for_bit(job, resumed, reference):
    _, _, records = job
    chief = records[0]
    for name in (resumed, reference):
        assert chief[name]["code"] == 0 and records[1][name]["code"] == 0
    assert chief[resumed]["global_step"] == chief[reference]["global_step"]
    np.testing.assert_array_equal(chief[resumed]["w"], chief[reference]["w"])
    np.testing.assert_array_equal(chief[resumed]["b"], chief[reference]["b"])
    assert chief[resumed]["w"] != chief["resume a" if resumed == "resume b" else "resume b"]["w"]  # not a constant


def test_a_rank_killed_while_its_peer_stops_bounds_the_wait_with_one_line(job):
    """Rank 1 dies (SIGKILL) as rank 0 is signalled: rank 0's next run cannot agree; it fails within
    hccl_timeout, says so in one line naming the newest checkpoint, and exits 143."""
    out, results, records = job
    chief = records[0][KILLED[0]]
    assert results[1].returncode == -9
    assert results[0].returncode == 143 and chief["code"] == 143
    assert chief["seconds"] < HCCL_TIMEOUT + 15  # the timeout plus start-up and a loaded machine's margin
    text = "\n".join(chief["lines"])
    assert re.search(rf"^SIGTERM: a peer rank did not answer within hccl_timeout={HCCL_TIMEOUT} s \(it exited or "
                     rf"was killed\), so the run in flight failed; no checkpoint from this run \(the newest is "
                     rf"{out}/e/model\.ckpt-0\); exiting with status 143$", text, re.M), text
    assert "Traceback" not in results[0].stderr


def _ranks_of(launcher_pid):
    """The launcher's child processes in rank order (each one's RANK_ID, from /proc)."""
    with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as handle:
        pids = [int(child) for child in handle.read().split()]
    ranks = {}
    for pid in pids:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            env = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
        ranks[int(env[b"RANK_ID"])] = pid
    return [ranks[rank] for rank in sorted(ranks)]


@pytest.mark.parametrize("who", ["every process", "rank 1 only"])
def test_npurun_launch_preempted_exits_143_with_one_line(tmp_path, who):
    """`npurun launch -n 2`, preempted two ways. "every process": SIGTERM to the launcher and to both
    ranks at once, as a scheduler signalling every process of the job does; each rank gets it
    twice (directly and forwarded by the launcher) and counts it once. "rank 1 only": the launcher
    sees rank 1 exit 143, treats it as an orderly stop and waits for rank 0, which stopped at the
    same step. Either way the chief saves, the launcher exits 143 with one line of its own, and
    there is no traceback anywhere."""
    script = str(Path(__file__).parent / "workers" / "estimator_preempt.py")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE")}
    env.update(OUT=str(tmp_path), CUDA_VISIBLE_DEVICES="", HCCL_CONNECT_TIMEOUT="90")
    proc = subprocess.Popen([sys.executable, "-m", "npurun.distribute.launch", "-n", "2", "--grace", "60", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        seen = set()
        while seen != {"0", "1"}:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()[-3000:]
            found = re.match(r"\[rank (\d)\] step 5$", line.strip())
            if found:
                seen.add(found.group(1))
        children = _ranks_of(proc.pid)
        for pid in [proc.pid, *children] if who == "every process" else children[1:]:
            os.kill(pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-3000:]
    assert "Traceback" not in err and "Second SIGTERM" not in err
    stops = re.findall(r"^\[rank (\d)\] SIGTERM( \(received by another rank\))?: training stopped at global step "
                       r"(\d+); ", err, re.M)
    assert sorted(rank for rank, _, _ in stops) == ["0", "1"] and len({step for _, _, step in stops}) == 1, err[-3000:]
    step = stops[0][2]
    chief_source = " (received by another rank)" if who == "rank 1 only" else ""
    assert f"[rank 0] SIGTERM{chief_source}: training stopped at global step {step}; saved " \
           f"{tmp_path}/model/model.ckpt-{step} with the input position; exiting with status 143" in err
    launcher = [line for line in err.splitlines() if line.startswith("npurun launch:")]
    assert launcher == (["npurun launch: received signal 15; stopping rank 0, rank 1"] if who == "every process" else
                        ["npurun launch: the ranks were preempted (SIGTERM) and stopped in order; exiting with status "
                         "143"]), launcher
