"""Fault injection with real processes: SIGTERM / SIGINT during training (checkpoint at the step
reached, exit 143 / 130, exact resume), a second signal, a second training job on a live
model_dir, readers while training writes, a stale lock of a dead process, and the signal
handlers restored after train()."""
import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import tensorflow as tf

import npurun
from estimator_helpers import checkpoint_steps, input_fn_for, make_data, model_fn
from npurun import preemption
from npurun.estimator import NPUEstimator, checkpoints, export as export_lib, model_dir_lock

HERE = os.path.dirname(os.path.abspath(__file__))
X, Y = make_data()
BASE = dict(log_step_count_steps=50, tf_random_seed=3, save_checkpoints_steps=100000, keep_checkpoint_max=3)

CHILD = textwrap.dedent(f"""
    import json, logging, sys, time, warnings
    sys.path.insert(0, {HERE!r})
    args = json.loads(sys.argv[2])
    import tensorflow as tf
    import npurun
    from npurun.estimator import NPUEstimator
    from estimator_helpers import input_fn_for, make_data, model_fn
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    class Pause(tf.compat.v1.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            if args["pause"] > 1:
                print("PAUSING", flush=True)
            time.sleep(args["pause"])

    warnings.simplefilter("ignore")
    x, y = make_data()
    est = NPUEstimator(model_fn, model_dir=sys.argv[1], config=npurun.NPURunConfig(**args["config"]))
    hooks = [Pause()] if args["pause"] else []
    est.train(input_fn_for(x, y, shuffle=True, seed=1), max_steps=args["max_steps"], hooks=hooks)
    print("DONE", flush=True)
""")


class Child:
    """A training process whose stderr goes to a file (polled, so the pipe never fills)."""

    def __init__(self, tmp_path, model_dir, max_steps=10 ** 7, pause=0.0, **config):
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        self.log = tmp_path / f"child-{time.monotonic_ns()}.log"
        args = json.dumps({"config": dict(BASE, **config), "max_steps": max_steps, "pause": pause})
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([sys.executable, str(script), model_dir, args], stdout=subprocess.PIPE,
                                            stderr=log, text=True, env=env)

    def text(self):
        return self.log.read_text()

    def wait_for(self, pattern, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.text())
            if match:
                return match
            assert self.process.poll() is None, f"child ended ({self.process.returncode}):\n{self.text()[-3000:]}"
            time.sleep(0.02)
        raise AssertionError(f"no {pattern!r} within {timeout} s:\n{self.text()[-3000:]}")

    def signal(self, number):
        self.process.send_signal(number)

    def finish(self, timeout=120):
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def _config(**options):
    options = dict(BASE, **options)
    options["log_step_count_steps"] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return npurun.NPURunConfig(**options)


def _readable(prefix):
    return checkpoints.why_unreadable(prefix) is None


@pytest.mark.slow
@pytest.mark.parametrize("signum,status,iterations,pause", [
    (signal.SIGTERM, 143, 1, 0.0),     # the hot loop (no hooks)
    (signal.SIGINT, 130, 10, 0.002),   # a device loop of 10 steps, with a hook
])
def test_a_signal_saves_where_training_is_and_the_resume_is_bit_identical(tmp_path, signum, status, iterations,
                                                                         pause):
    model_dir = str(tmp_path / "model")
    child = Child(tmp_path, model_dir, pause=pause, iterations_per_loop=iterations)
    child.wait_for(r"step = (?:[5-9]\d|\d{3,})\b")  # it is training, past step 50 (the first run logs too)
    child.signal(signum)
    assert child.finish() == status
    log = child.text()
    name = signal.Signals(signum).name
    match = re.search(rf"{name}: training stopped at global step (\d+); saved (\S+) with the input position; "
                      rf"exiting with status {status}", log)
    assert match, log[-3000:]
    stopped = int(match.group(1))
    assert stopped % iterations == 0 and stopped >= 50
    assert match.group(2) == os.path.join(model_dir, f"model.ckpt-{stopped}")
    assert checkpoint_steps(model_dir) == [0, stopped]  # training's start, then the signal's (no periodic save)
    assert _readable(match.group(2))
    assert "Traceback" not in log and "KeyboardInterrupt" not in log
    assert checkpoints.finished_step(model_dir) is None  # the next train() resumes the input position
    # Resume to `stopped + 100` and compare with an uninterrupted run to the same step.
    target = stopped + 100
    resumed = NPUEstimator(model_fn, model_dir=model_dir, config=_config(iterations_per_loop=iterations))
    resumed.train(input_fn_for(X, Y, shuffle=True, seed=1), max_steps=target)
    reference = NPUEstimator(model_fn, model_dir=str(tmp_path / "reference"),
                             config=_config(iterations_per_loop=iterations))
    reference.train(input_fn_for(X, Y, shuffle=True, seed=1), max_steps=target)
    for variable in ("linear/w", "linear/b", "global_step"):
        np.testing.assert_array_equal(resumed.get_variable_value(variable), reference.get_variable_value(variable))


@pytest.mark.slow
def test_a_second_signal_exits_at_once_without_a_checkpoint(tmp_path):
    model_dir = str(tmp_path / "model")
    child = Child(tmp_path, model_dir, pause=30.0)
    assert child.process.stdout.readline().strip() == "PAUSING"  # inside the first run's hook
    child.signal(signal.SIGTERM)
    time.sleep(0.5)
    assert child.process.poll() is None  # the first signal waits for the run in flight
    started = time.monotonic()
    child.signal(signal.SIGTERM)
    assert child.finish(timeout=20) == 143
    assert time.monotonic() - started < 10  # not the 30 s the run in flight still had to go
    assert "Second SIGTERM: exiting at once" in child.text()
    assert checkpoint_steps(model_dir) == [0]  # only training's start: none for the signal


@pytest.mark.slow
def test_a_second_job_on_a_live_model_dir_is_refused_and_readers_work_while_training_writes(tmp_path, caplog):
    model_dir = str(tmp_path / "model")
    child = Child(tmp_path, model_dir, save_checkpoints_steps=5, keep_checkpoint_max=3)
    child.wait_for(r"Saving checkpoint for step 10\b")
    second = NPUEstimator(model_fn, model_dir=model_dir, config=_config(save_checkpoints_steps=5))
    with pytest.raises(model_dir_lock.ModelDirInUseError,
                       match=rf"in use by another training job \(pid {child.process.pid} on host "):
        second.train(input_fn_for(X, Y), steps=5)
    # Readers need no lock: checkpoints rotate every few milliseconds underneath them.
    steps_seen = []
    with caplog.at_level(logging.WARNING, logger="npurun"):
        for _ in range(2):
            steps_seen.append(second.evaluate(input_fn_for(X, Y, repeat=False))["global_step"])
            steps_seen.append(int(second.get_variable_value("global_step")))
            assert len(list(second.predict(input_fn_for(X, repeat=False)))) == len(X)
            assert "linear/w" in second.get_variable_names()
        serving = export_lib.build_raw_serving_input_receiver_fn({"x": tf.TensorSpec([None, 4], tf.float32)})
        exported = second.export_saved_model(str(tmp_path / "export"), serving)
    assert steps_seen == sorted(steps_seen) and steps_seen[-1] > steps_seen[0], steps_seen  # it kept training
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in warned if "damaged" in m or "does not restore" in m], warned
    assert tf.train.load_variable(os.path.join(exported, "variables", "variables"), "global_step") >= steps_seen[-1]
    child.signal(signal.SIGTERM)
    assert child.finish() == 143, child.text()[-3000:]
    assert "with the input position; exiting with status 143" in child.text()
    assert "Traceback" not in child.text()
    for step in checkpoint_steps(model_dir):
        assert _readable(os.path.join(model_dir, f"model.ckpt-{step}"))
    state = tf.train.get_checkpoint_state(model_dir)
    assert all(_readable(path) for path in state.all_model_checkpoint_paths)
    assert len(state.all_model_checkpoint_paths) == 3


def test_a_dead_holders_lock_is_taken_over_with_a_warning(tmp_path, caplog):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (model_dir / model_dir_lock.LOCK_FILE).write_text(json.dumps({"host": "gone", "pid": dead.pid,
                                                                    "started": 0}))
    est = NPUEstimator(model_fn, model_dir=str(model_dir), config=_config(save_checkpoints_steps=5))
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est.train(input_fn_for(X, Y), steps=5)
    assert any(f"Taking over the training lock of pid {dead.pid} on host gone" in r.getMessage()
               for r in caplog.records)
    assert (model_dir / model_dir_lock.LOCK_FILE).read_text() == ""  # released cleanly
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est.train(input_fn_for(X, Y), steps=5)
    assert not [r for r in caplog.records if "Taking over" in r.getMessage()]


def test_handlers_are_installed_during_train_only_and_restored(tmp_path):
    seen = {}

    class Look(tf.compat.v1.train.SessionRunHook):
        def before_run(self, run_context):
            seen["term"] = signal.getsignal(signal.SIGTERM)
            seen["int"] = signal.getsignal(signal.SIGINT)
            seen["watch"] = preemption.current().installed

    def mine(signum, frame):
        pass
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        est = NPUEstimator(model_fn, model_dir=str(tmp_path / "model"), config=_config())
        est.train(input_fn_for(X, Y), steps=2, hooks=[Look()])
        assert seen["watch"] and seen["term"] is not mine and seen["int"] is not signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert not preemption.current().installed
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_signal_in_process_stops_after_the_run_and_raises_system_exit(tmp_path):
    """The same path as a scheduler's SIGTERM, in process: SystemExit(143) after the checkpoint."""
    class SignalAtStep(tf.compat.v1.train.SessionRunHook):
        def begin(self):
            self._step = tf.compat.v1.train.get_global_step()

        def before_run(self, run_context):
            return tf.compat.v1.train.SessionRunArgs(self._step)

        def after_run(self, run_context, run_values):
            if run_values.results >= 5 and not sent:
                sent.append(int(run_context.session.run(self._step)))  # where this run left it
                os.kill(os.getpid(), signal.SIGTERM)
    sent = []
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    with pytest.raises(SystemExit) as stopped:
        est.train(input_fn_for(X, Y), steps=50, hooks=[SignalAtStep()])
    assert stopped.value.code == 143
    assert checkpoint_steps(model_dir) == [0, sent[0]]  # no further run after the signal


def test_an_ignored_signal_stays_ignored_during_train(tmp_path):
    seen = {}

    class Look(tf.compat.v1.train.SessionRunHook):
        def before_run(self, run_context):
            seen["int"] = signal.getsignal(signal.SIGINT)
            seen["term"] = signal.getsignal(signal.SIGTERM)

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        est = NPUEstimator(model_fn, model_dir=str(tmp_path / "model"), config=_config())
        est.train(input_fn_for(X, Y), steps=2, hooks=[Look()])
        assert seen["int"] is signal.SIG_IGN and seen["term"] not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
