"""Checkpoint schedule, retention, resume, warm start, listeners, crash leftovers, chief-only saving."""
import glob
import logging
import os
import time

import numpy as np
import tensorflow as tf

from estimator_helpers import checkpoint_steps, input_fn_for, make_data, model_fn
from npurun.estimator import NPUEstimator, checkpoints

v1 = tf.compat.v1
X, Y = make_data()


def expected_step_saves(start, end, every):
    """The rule: the step training starts at (as tf.estimator), the first step at or after each
    multiple of `every`, plus the last step."""
    saves = [start] + [s for s in range(start + 1, end + 1) if s % every == 0]
    return saves if saves[-1] == end else saves + [end]


def test_steps_schedule_and_resume(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=3,
                                                                         keep_checkpoint_max=0))
    est.train(input_fn_for(X, Y), steps=10)
    assert checkpoint_steps(model_dir) == expected_step_saves(0, 10, 3)
    est.train(input_fn_for(X, Y), steps=5)  # resumes at 10
    assert checkpoint_steps(model_dir) == sorted(set(expected_step_saves(0, 10, 3) + expected_step_saves(10, 15, 3)))
    assert est.latest_checkpoint() == os.path.join(model_dir, "model.ckpt-15")


def test_keep_checkpoint_max(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=2,
                                                                         keep_checkpoint_max=3))
    est.train(input_fn_for(X, Y), steps=9)
    assert checkpoint_steps(model_dir) == expected_step_saves(0, 9, 2)[-3:]
    state = tf.train.get_checkpoint_state(model_dir)
    assert [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths] == checkpoint_steps(model_dir)
    # Retention carries over to the next train() call (the state file remembers the window).
    est.train(input_fn_for(X, Y), steps=4)
    assert checkpoint_steps(model_dir) == [10, 12, 13]


def test_save_checkpoints_steps_0_saves_nothing(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=0))
    est.train(input_fn_for(X, Y), steps=5)
    assert checkpoint_steps(model_dir) == [] and est.latest_checkpoint() is None


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class AdvanceClock(v1.train.SessionRunHook):
    """Each training run takes `seconds` of fake wall time."""

    def __init__(self, clock, seconds):
        self.clock, self.seconds = clock, seconds

    def after_run(self, run_context, run_values):
        self.clock.now += self.seconds


def test_secs_schedule_with_a_controlled_clock(make_config, model_dir, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(checkpoints, "clock", clock)
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_secs=2.5,
                                                                         keep_checkpoint_max=0))
    est.train(input_fn_for(X, Y), steps=10, hooks=[AdvanceClock(clock, 1.0)])
    # The rule: at the start; at each run, save if >= 2.5 s passed since the last save; and at the end.
    expected, last = [0], 0.0
    for step in range(1, 11):
        if step * 1.0 - last >= 2.5:
            expected.append(step)
            last = step * 1.0
    assert checkpoint_steps(model_dir) == expected + ([10] if expected[-1] != 10 else [])


def test_secs_schedule_on_the_hot_path(make_config, model_dir):
    """Without hooks (the cached-callable path) the time is still checked at every run."""
    saves = []

    class Listener(v1.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            saves.append((global_step_value, time.monotonic()))

    def slow_input():
        return input_fn_for(X, Y)().map(lambda f, l: (tf.py_function(_sleep, [f["x"]], tf.float32), l)).map(
            lambda x, l: ({"x": tf.ensure_shape(x, [None, 4])}, l))

    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_secs=0.3,
                                                                         keep_checkpoint_max=0))
    start = time.monotonic()
    est.train(slow_input, steps=40, saving_listeners=[Listener()])  # >= 40 * 0.04 s
    elapsed = time.monotonic() - start
    intermediate = [save for save in saves[:-1] if save[0] > 0]  # not training's start checkpoint
    assert saves[-1][0] == 40
    assert len(intermediate) >= 2 and len(intermediate) <= elapsed / 0.3
    times = [start] + [t for _, t in intermediate]
    assert all(b - a >= 0.3 - 0.05 for a, b in zip(times, times[1:]))


def _sleep(x):
    time.sleep(0.04)
    return x


def keep_rule(save_times, max_to_keep, keep_secs, start):
    """tf.compat.v1.train.Saver's retention, written out: the steps whose files remain."""
    window, preserved, next_keep = [], [], start + keep_secs
    for step, t in save_times:
        window.append((step, t))
        while len(window) > max_to_keep:
            old_step, old_t = window.pop(0)
            if old_t >= next_keep:
                preserved.append(old_step)
                next_keep = old_t + keep_secs
    return sorted(preserved + [s for s, _ in window])


def test_keep_checkpoint_every_n_hours_with_a_controlled_clock(make_config, model_dir, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(checkpoints, "clock", clock)
    hours = 4 / 3600  # four (fake) seconds
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(
        save_checkpoints_steps=1, keep_checkpoint_max=2, keep_checkpoint_every_n_hours=hours))
    start = clock.now
    est.train(input_fn_for(X, Y), steps=14, hooks=[AdvanceClock(clock, 1.0)])
    expected = keep_rule([(s, start + s) for s in range(1, 15)], 2, 4.0, start)
    assert len(expected) > 2  # the rule keeps more than the window here
    assert checkpoint_steps(model_dir) == expected


def test_saving_listeners_protocol_and_stop(make_config, model_dir):
    calls = []

    class Listener(v1.train.CheckpointSaverListener):
        def begin(self):
            calls.append("begin")

        def before_save(self, session, global_step_value):
            calls.append(("before", global_step_value))

        def after_save(self, session, global_step_value):
            calls.append(("after", global_step_value))
            return global_step_value >= 4  # ask training to stop

        def end(self, session, global_step_value):
            calls.append(("end", global_step_value))

    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=2))
    est.train(input_fn_for(X, Y), steps=10, saving_listeners=[Listener()])
    assert calls == ["begin", ("before", 0), ("after", 0), ("before", 2), ("after", 2), ("before", 4), ("after", 4),
                     ("end", 4)]  # the first save is the state training starts from, as in tf.estimator
    assert est.get_variable_value("global_step") == 4


def test_warm_start_from_a_checkpoint_dir(make_config, tmp_path):
    source = NPUEstimator(model_fn, model_dir=str(tmp_path / "source"), config=make_config())
    source.train(input_fn_for(X, Y), steps=5)
    target = NPUEstimator(model_fn, model_dir=str(tmp_path / "target"), config=make_config(),
                          params={"learning_rate": 0.0}, warm_start_from=str(tmp_path / "source"))
    target.train(input_fn_for(X, Y), steps=1)
    np.testing.assert_array_equal(target.get_variable_value("linear/w"), source.get_variable_value("linear/w"))
    assert target.get_variable_value("global_step") == 1  # the global step is not warm-started
    # Once target has its own checkpoint, that wins over warm_start_from.
    retrained = NPUEstimator(model_fn, model_dir=str(tmp_path / "target"), config=make_config(),
                             params={"learning_rate": 0.5}, warm_start_from=str(tmp_path / "source"))
    retrained.train(input_fn_for(X, Y), steps=1)
    assert retrained.get_variable_value("global_step") == 2


def test_restore_falls_back_from_a_broken_newest_checkpoint(make_config, model_dir, caplog):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=3,
                                                                         keep_checkpoint_max=0))
    est.train(input_fn_for(X, Y), steps=6)
    with open(glob.glob(os.path.join(model_dir, "model.ckpt-6.data-*"))[0], "r+b") as data:
        data.truncate(8)
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est.train(input_fn_for(X, Y), steps=1)
    assert any("model.ckpt-6" in r.getMessage() for r in caplog.records)
    # Training resumed from step 3 (step 0: the start-of-training checkpoint). The damaged files stay as they are (a read error may be
    # transient), and every reader skips them with a warning naming them.
    assert checkpoint_steps(model_dir) == [0, 3, 4, 6]
    assert not glob.glob(os.path.join(model_dir, "*.unreadable"))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="npurun"):
        assert est.get_variable_value("global_step") == 4
    assert any("model.ckpt-6" in r.getMessage() for r in caplog.records)


def test_restart_after_a_kill_between_save_and_state_update(make_config, model_dir):
    """A kill can leave .tempstate files (save interrupted) or a checkpoint the state file does not
    list yet (saved, state not updated); the restart resumes from the newest complete one."""
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=3,
                                                                         keep_checkpoint_max=0))
    est.train(input_fn_for(X, Y), steps=6)
    tf.compat.v1.train.update_checkpoint_state(model_dir, "model.ckpt-3", ["model.ckpt-3"])
    leftover = os.path.join(model_dir, "model.ckpt-9.data-00000-of-00001.tempstate123")
    open(leftover, "wb").write(b"partial")
    assert est.latest_checkpoint().endswith("model.ckpt-6")
    est.train(input_fn_for(X, Y), steps=1)
    assert est.get_variable_value("global_step") == 7
    assert not os.path.exists(leftover)


def test_only_the_chief_writes_checkpoints_and_summaries(make_config, model_dir, monkeypatch):
    # A real non-chief needs a cluster (TF_CONFIG and a server to connect to); what is tested here
    # is that the Estimator asks config.is_chief before writing anything.
    config = make_config(save_checkpoints_steps=2, save_summary_steps=1, log_step_count_steps=1)
    monkeypatch.setattr(type(config), "is_chief", property(lambda self: False))
    NPUEstimator(model_fn, model_dir=model_dir, config=config).train(input_fn_for(X, Y), steps=4)
    assert not os.path.exists(model_dir) or not os.listdir(model_dir)


def test_relative_model_dir_state_file_holds_basenames_that_tensorflow_resolves(make_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    est = NPUEstimator(model_fn, model_dir="model", config=make_config(save_checkpoints_steps=2,
                                                                       keep_checkpoint_max=2))
    est.train(input_fn_for(X, Y), steps=4)
    # As tf.compat.v1.train.Saver writes them: relative to the model_dir, so the directory can be
    # read from any working directory (and moved).
    state = (tmp_path / "model" / "checkpoint").read_text()
    assert 'model_checkpoint_path: "model.ckpt-4"' in state
    assert 'all_model_checkpoint_paths: "model.ckpt-2"' in state and ".." not in state
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert tf.train.latest_checkpoint("../model") == os.path.join("..", "model", "model.ckpt-4")
    assert tf.train.latest_checkpoint(str(tmp_path / "model")) == str(tmp_path / "model" / "model.ckpt-4")
    # npurun resumes from it, and retention continues from the window the state file records.
    monkeypatch.chdir(tmp_path)
    est.train(input_fn_for(X, Y), steps=2)
    assert checkpoint_steps("model") == [4, 6]
    assert tf.train.get_checkpoint_state("model").all_model_checkpoint_paths == ["model/model.ckpt-4",
                                                                              "model/model.ckpt-6"]
