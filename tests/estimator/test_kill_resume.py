"""SIGKILL a training process mid-run, repeatedly: every checkpoint left loads, restarts resume from
the newest one (the global step never goes back), the last run reaches max_steps, and it ends with
the same weights as an uninterrupted run (checkpoints hold the input position, shuffle included).

Where each kill lands is decided by the test, not by a timer: the child's hook stops after the step
the test names (between two checkpoints) and says so, and the test kills it then."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from estimator_helpers import checkpoint_steps, input_fn_for, make_data, model_fn
from npurun.estimator import NPUEstimator

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_STEPS = 1500
CONFIG = dict(save_checkpoints_steps=5, keep_checkpoint_max=3, log_step_count_steps=None, tf_random_seed=3)

CHILD = textwrap.dedent(f"""
    import sys, time, warnings
    sys.path.insert(0, {HERE!r})
    CONFIG = {CONFIG!r}
    import tensorflow as tf
    import npurun
    from npurun.estimator import NPUEstimator
    from estimator_helpers import input_fn_for, make_data, model_fn

    class ReportStart(tf.compat.v1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            step = session.run(tf.compat.v1.train.get_global_step())
            print("START", step, flush=True)
        def before_run(self, run_context):
            return None

    class StopAfter(tf.compat.v1.train.SessionRunHook):
        # After the run that reaches global step sys.argv[2]: say so, then wait to be killed.
        def begin(self):
            self.global_step = tf.compat.v1.train.get_global_step()
        def after_run(self, run_context, run_values):
            step = run_context.session.run(self.global_step)
            if step >= int(sys.argv[2]):
                print("AT", step, flush=True)
                time.sleep(3600)

    x, y = make_data()
    warnings.simplefilter("ignore")
    config = npurun.NPURunConfig(**CONFIG)
    est = NPUEstimator(model_fn, model_dir=sys.argv[1], config=config)
    est.train(input_fn_for(x, y, shuffle=True), max_steps={MAX_STEPS}, hooks=[ReportStart(), StopAfter()])
    print("DONE", est.get_variable_value("global_step"), flush=True)
""")


def _all_checkpoints_load(model_dir):
    for step in checkpoint_steps(model_dir):
        reader = tf.train.load_checkpoint(os.path.join(model_dir, f"model.ckpt-{step}"))
        for name, dtype in reader.get_variable_to_dtype_map().items():
            if dtype != tf.variant:  # the input position is a variant numpy cannot hold
                reader.get_tensor(name)  # reads the data, not just the index
        assert reader.get_tensor("global_step") == step


def _start(model_dir, script, stop_at=MAX_STEPS + 1):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, str(script), model_dir, str(stop_at)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)


def _start_step(process):
    line = process.stdout.readline()
    assert line.startswith("START"), line
    return int(line.split()[1])


@pytest.mark.slow
def test_sigkill_mid_training_then_resume(tmp_path, make_config):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    model_dir = str(tmp_path / "model")
    newest_before = 0
    for steps_before_kill in (23, 7):  # neither on a checkpoint step (every 5)
        process = _start(model_dir, script, stop_at=newest_before + steps_before_kill)
        start = _start_step(process)
        assert start == newest_before  # resumed from the newest complete checkpoint, never earlier
        line = process.stdout.readline()
        assert line == f"AT {start + steps_before_kill}\n", line  # training is there, waiting
        process.send_signal(signal.SIGKILL)
        process.wait()
        _all_checkpoints_load(model_dir)
        steps = checkpoint_steps(model_dir)
        assert steps and steps[-1] >= newest_before  # the global step never goes back
        assert steps[-1] == (start + steps_before_kill) // 5 * 5  # the last save before the kill is kept
        newest_before = steps[-1]
        assert newest_before < MAX_STEPS, "training finished before the kill; make it longer"
    process = _start(model_dir, script)
    assert _start_step(process) == newest_before
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0
    assert f"DONE {MAX_STEPS}" in out
    _all_checkpoints_load(model_dir)
    assert checkpoint_steps(model_dir)[-1] == MAX_STEPS
    x, y = make_data()
    reference = NPUEstimator(model_fn, model_dir=str(tmp_path / "reference"), config=make_config(**CONFIG))
    reference.train(input_fn_for(x, y, shuffle=True), max_steps=MAX_STEPS)
    resumed = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(**CONFIG))
    for name in ("linear/w", "linear/b"):
        np.testing.assert_array_equal(resumed.get_variable_value(name), reference.get_variable_value(name))
