"""Parameter-server mode, 1 ps + 2 workers on 127.0.0.1: asynchronous training reaches the result of
one process training on all the data.

Model: linear regression y = x @ [1.5, -2, 0.5] + 0.25 (64 noise-free rows), SGD 0.1, 150 steps of
8 rows per worker (single process: 150 steps of 16 rows). Both converge to the least-squares
solution; tolerance 1e-3 on every weight (asynchronous updates make the path, not the end point,
differ).
"""
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from npurun.distribute import ps
from npurun.distribute.errors import InitializationTimeoutError, StartupTimeoutError

from .conftest import Ranks, assert_ok, run_ranks

STEPS, BATCH = 150, 8
TOLERANCE = 1e-3
v1 = tf.compat.v1


def single_process():
    rng = np.random.RandomState(7)
    X = rng.randn(64, 3).astype(np.float32)
    Y = X @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2 * BATCH, 3])
        y = tf.compat.v1.placeholder(tf.float32, [2 * BATCH, 1])
        w = tf.compat.v1.get_variable("w", initializer=np.zeros([3, 1], np.float32))
        b = tf.compat.v1.get_variable("b", initializer=np.float32(0.0))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            for i in range(STEPS):
                rows = [(i * 2 * BATCH + k) % len(X) for k in range(2 * BATCH)]
                session.run(train, {x: X[rows], y: Y[rows]})
            return session.run(w), session.run(b)


@pytest.mark.slow
def test_one_ps_two_workers_train_to_the_single_process_result(out):
    # the chief initialises 2 s after the start-up barrier; worker 1 must wait for it
    results = run_ranks("ps_train.py", 2, out, args=(STEPS, BATCH), ps=1, timeout=120,
                        extra={0: {"CHIEF_INIT_DELAY": "2"}})
    assert_ok(results)
    reports = [results[r].results(out) for r in range(2)]
    # worker 1 started training only after the chief began initialising, having waited for it
    assert reports[1]["ready_at"] >= reports[0]["init_started_at"]
    assert reports[1]["waited"] >= 1.0
    # the variables live on the ps task
    assert reports[0]["var_devices"] == ["/job:ps/task:0"] * len(reports[0]["var_devices"])
    # the shared global step counts both workers' steps
    assert reports[0]["global_step"] == reports[1]["global_step"] == 2 * STEPS
    assert reports[0]["w"] == reports[1]["w"]  # read from the same ps after both finished
    w, b = single_process()
    np.testing.assert_allclose(np.array(reports[0]["w"]), w, atol=TOLERANCE)
    assert abs(reports[0]["b"] - b) <= TOLERANCE


@pytest.mark.slow
def test_estimator_in_ps_mode_through_the_launcher(tmp_path):
    """NPURunConfig(distribute=ParameterServerStrategy()) with `npurun launch -n 2 --ps 1`: the ps
    task's train() serves, the workers' variables live on the ps, and the shared model reaches the
    single-process result within 1e-3. That result is the exact least-squares solution of the
    noise-free data, w = [1.5, -2, 0.5], b = 0.25 (the test above shows a single process reaching
    it), so no fourth TensorFlow process is started for it."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = str(Path(__file__).parent / "scripts" / "estimator_ps.py")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    launch = subprocess.run([sys.executable, "-m", "npurun.distribute.launch", "-n", "2", "--ps", "1",
                             "--startup-timeout", "60", script, str(tmp_path), "300", "8"],
                            capture_output=True, text=True, env=env, timeout=180)
    assert launch.returncode == 0, launch.stderr[-5000:]
    assert "every rank finished; stopping ps 0" in launch.stderr
    w_single, b_single = single_process()
    np.testing.assert_allclose(w_single, [[1.5], [-2.0], [0.5]], atol=TOLERANCE)
    workers = [json.loads((tmp_path / f"worker{i}.json").read_text()) for i in range(2)]
    for report in workers:
        assert report["var_devices"] == ["/job:ps/task:0"] * len(report["var_devices"])
        np.testing.assert_allclose(np.array(report["w"]), w_single, atol=TOLERANCE)
        assert abs(report["b"] - b_single) <= TOLERANCE
    # the global step is shared: the two workers together made the 300 steps
    assert max(w["global_step"] for w in workers) >= 300
    assert any(name.startswith("model.ckpt") for name in os.listdir(tmp_path / "model"))


@pytest.mark.slow
def test_estimator_ps_worker_waits_for_the_chiefs_initialisation(out):
    """NPUEstimator in PS mode, 1 ps + 2 workers (forked ranks); the chief's input_fn takes 3 s, so
    it initialises the shared variables at least 3 s late. Worker 1 must not initialise them itself:
    its session is ready only after the chief got past input_fn. Needs the Estimator to honour
    `plan.wait_for_initialization` (and `plan.target`)."""
    script = Path(__file__).parent / "scripts" / "estimator_ps.py"
    ranks = Ranks(script, 2, out, args=(out, 40, 8, 3), ps=1, extra={"all": {"HCCL_CONNECT_TIMEOUT": "60"}})
    # No budget of its own: the ps task ends by itself once both workers have exited (ps.py), and
    # `wait`'s bound (counted from the start, TensorFlow's import included) only catches a hang.
    results = ranks.wait(timeout=240)
    for result in results:
        assert result.returncode == 0, result.stderr[-3000:]
    chief, worker = (json.loads((out / f"worker{i}.json").read_text()) for i in range(2))
    assert worker["session_ready_at"] >= chief["input_done_at"]
    assert worker["var_devices"] == ["/job:ps/task:0"] * len(worker["var_devices"])


@pytest.fixture
def one_process(monkeypatch):
    for name in ("TF_CONFIG", "RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE"):
        monkeypatch.delenv(name, raising=False)


def two_variables():
    graph = tf.Graph()
    with graph.as_default():
        w = v1.get_variable("w", initializer=np.zeros([3, 1], np.float32))
        v1.get_variable("b", initializer=np.float32(0.0))
        init = v1.global_variables_initializer()
    return graph, w, init


def test_wait_for_initialization_returns_once_initialised(one_process):
    # another thread plays the chief: it initialises 0.5 s later, through the same session
    graph, w, init = two_variables()
    with v1.Session(graph=graph) as session:
        chief = threading.Timer(0.5, lambda: session.run(init))
        chief.start()
        waited = ps.wait_for_initialization(session, timeout=20, poll_seconds=0.05)
        chief.join()
        assert 0.4 <= waited < 20
        assert session.run(w).tolist() == [[0.0]] * 3


def test_wait_for_initialization_is_bounded_and_names_what_is_missing(one_process):
    graph, _, _ = two_variables()
    with v1.Session(graph=graph) as session:
        started = time.monotonic()
        with pytest.raises(InitializationTimeoutError) as caught:
            ps.wait_for_initialization(session, timeout=1, poll_seconds=0.1)
        assert time.monotonic() - started < 1 + 2
    error = caught.value
    assert isinstance(error, StartupTimeoutError)
    assert sorted(error.missing) == ["b", "w"]
    assert "the chief (rank 0, /job:worker/replica:0/task:0 at 127.0.0.1:" in str(error)
    assert "did not initialise the shared variables within the start-up timeout of 1 s (HCCL_CONNECT_TIMEOUT)" \
        in str(error)
    assert "still uninitialised: w, b." in str(error)


def test_the_readiness_op_is_built_before_the_graph_is_finalised(one_process):
    graph, _, _ = two_variables()
    report = ps.uninitialized_variables(graph)
    assert ps.uninitialized_variables(graph) is report  # once per graph
    other, _, _ = two_variables()
    other.finalize()
    with pytest.raises(RuntimeError, match="finalized.*before finalizing"):
        ps.uninitialized_variables(other)
