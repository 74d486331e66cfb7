"""TensorBoard summaries at the scheduled steps, logging, and reproducibility with tf_random_seed."""
import logging
import re

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from estimator_helpers import LossRecorder, input_fn_for, make_data, model_fn
from npurun.estimator import NPUEstimator

v1 = tf.compat.v1
X, Y = make_data()


def with_own_summary(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    v1.summary.scalar("mean_x", tf.reduce_mean(features["x"]))
    return spec


def _accumulator(model_dir):
    acc = event_accumulator.EventAccumulator(model_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return acc


def test_loss_and_model_summaries_at_the_scheduled_steps(make_config, model_dir):
    est = NPUEstimator(with_own_summary, model_dir=model_dir, config=make_config(save_summary_steps=3))
    recorder = LossRecorder()
    est.train(input_fn_for(X, Y), steps=10, hooks=[recorder])
    acc = _accumulator(model_dir)
    expected_steps = [s for s in range(1, 11) if s % 3 == 0]
    assert [e.step for e in acc.Scalars("loss")] == expected_steps
    assert [e.step for e in acc.Scalars("mean_x")] == expected_steps
    # Each summary holds the loss of the run that reached that step.
    for event in acc.Scalars("loss"):
        assert event.value == pytest.approx(recorder.losses[event.step - 1], rel=1e-6)
    # The next train() call continues the schedule from where the global step is.
    est.train(input_fn_for(X, Y), steps=5)
    assert [e.step for e in _accumulator(model_dir).Scalars("loss")] == [s for s in range(1, 16) if s % 3 == 0]


def test_summaries_on_the_hot_path_and_disabled(make_config, tmp_path):
    on = str(tmp_path / "on")
    NPUEstimator(model_fn, model_dir=on, config=make_config(save_summary_steps=4)).train(input_fn_for(X, Y), steps=13)
    assert [e.step for e in _accumulator(on).Scalars("loss")] == [4, 8, 12]
    off = str(tmp_path / "off")
    NPUEstimator(model_fn, model_dir=off, config=make_config(save_summary_steps=0)).train(input_fn_for(X, Y), steps=5)
    assert "loss" not in _accumulator(off).Tags()["scalars"]


def test_logging_every_n_steps(make_config, model_dir, caplog):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(log_step_count_steps=4))
    with caplog.at_level(logging.INFO, logger="npurun"):
        est.train(input_fn_for(X, Y), steps=10)
    messages = [r.getMessage() for r in caplog.records if r.name == "npurun"]
    logged_steps = [int(m) for text in messages for m in re.findall(r"loss = [-\d.e]+, step = (\d+)", text)]
    assert logged_steps == [1, 4, 8]  # the first run's loss too, as TF 1's LoggingTensorHook logged it
    assert sum("global_step/sec" in m for m in messages) == 2  # (a rate needs a run before it)
    assert [e.step for e in _accumulator(model_dir).Scalars("global_step/sec")] == [4, 8]


def test_logging_disabled(make_config, model_dir, caplog):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(log_step_count_steps=None))
    with caplog.at_level(logging.INFO, logger="npurun"):
        est.train(input_fn_for(X, Y), steps=6)
    assert not [r for r in caplog.records if "global_step/sec" in r.getMessage()]


def _losses(make_config, directory, seed):
    est = NPUEstimator(model_fn, model_dir=directory, config=make_config(tf_random_seed=seed),
                       params={"dropout": 0.3})
    recorder = LossRecorder()
    est.train(input_fn_for(X, Y, shuffle=True), steps=8, hooks=[recorder])
    return recorder.losses


def test_same_seed_same_losses(make_config, tmp_path):
    first = _losses(make_config, str(tmp_path / "a"), seed=7)
    second = _losses(make_config, str(tmp_path / "b"), seed=7)
    other = _losses(make_config, str(tmp_path / "c"), seed=8)
    assert first == second
    assert not np.allclose(first, other)
