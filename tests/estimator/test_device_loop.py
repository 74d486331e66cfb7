"""iterations_per_loop > 1: N steps per Session.run inside a tf.while_loop, with the input inside it."""
import logging
import os
import re

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

import npurun.estimator.estimator as estimator_module
from estimator_helpers import CLASSES, FEATURES, checkpoint_steps, input_fn_for, make_data
from npurun.estimator import NPUEstimator, NPUEstimatorSpec

v1 = tf.compat.v1
X, Y = make_data()


def seeded_model_fn(features, labels, mode, params):
    """A small MLP whose initial weights do not depend on graph construction order (op seeds), so
    the single-step graph and the device-loop graph start from the same point."""
    x = features["x"]
    w1 = v1.get_variable("w1", [FEATURES, 16], initializer=v1.glorot_uniform_initializer(seed=1))
    w2 = v1.get_variable("w2", [16, CLASSES], initializer=v1.glorot_uniform_initializer(seed=2))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=v1.train.get_global_step())
    host_call = (_host_fn, [tf.reshape(loss, []), tf.reduce_mean(x)]) if params.get("host_call") else None
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op, host_call=host_call)


def _host_fn(loss, mean_x):
    return [v1.summary.scalar("host_loss", loss), v1.summary.scalar("host_mean_x", mean_x)]


def _train(make_config, model_dir, n, steps, **options):
    params = options.pop("params", {})
    est = NPUEstimator(seeded_model_fn, model_dir=model_dir, params=params,
                       config=make_config(iterations_per_loop=n, **options))
    est.train(input_fn_for(X, Y, shuffle=True, seed=3), steps=steps)
    return est


def _scalars(model_dir, tag):
    acc = event_accumulator.EventAccumulator(model_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars(tag)} if tag in acc.Tags()["scalars"] else {}


def test_loops_of_1_7_100_reach_the_same_weights(make_config, tmp_path):
    """Same ops, same data order: the device loop changes only who iterates. Tolerance: the loop
    body runs as a function, which TensorFlow may optimise (fuse, reorder float ops) differently
    from the plain graph, so weights agree to float32 rounding rather than bit for bit."""
    weights = {}
    for n in (1, 7, 100):
        est = _train(make_config, str(tmp_path / f"n{n}"), n, 700, save_checkpoints_steps=100000)
        assert est.get_variable_value("global_step") == 700
        weights[n] = [est.get_variable_value(name) for name in ("w1", "w2")]
    for n in (7, 100):
        for single, looped in zip(weights[1], weights[n]):
            np.testing.assert_allclose(looped, single, rtol=1e-4, atol=1e-5)


def _boundary_rule(start, end, n, every):
    """Run boundaries are start+n, start+2n, ...; an event fires at the first boundary at or after
    each multiple of `every`."""
    fired, due = [], (start // every + 1) * every
    for boundary in range(start + n, end + 1, n):
        if boundary >= due:
            fired.append(boundary)
            due = (boundary // every + 1) * every
    return fired


def test_global_step_checkpoints_logs_and_summaries_in_loop_mode(make_config, tmp_path, caplog):
    loop_dir, single_dir = str(tmp_path / "loop"), str(tmp_path / "single")
    with caplog.at_level(logging.INFO, logger="npurun"):
        est = _train(make_config, loop_dir, 7, 70, save_checkpoints_steps=10, keep_checkpoint_max=0,
                     save_summary_steps=5, log_step_count_steps=20, params={"host_call": True})
    assert est.get_variable_value("global_step") == 70
    saves = _boundary_rule(0, 70, 7, 10)
    # the start state (as tf.estimator), the boundary rule, the end
    assert checkpoint_steps(loop_dir) == [0] + saves + ([70] if saves[-1] != 70 else [])
    logged = [int(m.group(1)) for r in caplog.records
              for m in [re.search(r"mean of the last 7 steps .*step = (\d+)", r.getMessage())] if m]
    # the first run's loss too (TF 1's LoggingTensorHook logged its first iteration), then the boundary rule
    assert logged == [7] + _boundary_rule(0, 70, 7, 20)
    # Loss and host_call summaries exist for every multiple of 5, not just at loop boundaries, and
    # equal what single-step training writes.
    _train(make_config, single_dir, 1, 70, save_checkpoints_steps=0, save_summary_steps=5,
           params={"host_call": True})
    multiples = list(range(5, 71, 5))
    for tag in ("loss", "host_loss", "host_mean_x"):
        looped, single = _scalars(loop_dir, tag), _scalars(single_dir, tag)
        assert sorted(looped) == sorted(single) == multiples, tag
        np.testing.assert_allclose([looped[s] for s in multiples], [single[s] for s in multiples], rtol=1e-4)
    assert _scalars(loop_dir, "loss") == pytest.approx(_scalars(loop_dir, "host_loss"))


def test_finite_input_ending_inside_a_loop(make_config, model_dir, tmp_path, caplog):
    est = NPUEstimator(seeded_model_fn, model_dir=model_dir, params={"host_call": True},
                       config=make_config(iterations_per_loop=3, save_summary_steps=1, log_step_count_steps=3))
    with caplog.at_level(logging.INFO, logger="npurun"):
        est.train(input_fn_for(X[:40], Y[:40], batch=8, repeat=False), steps=30)  # only 5 batches
    assert est.get_variable_value("global_step") == 5
    assert est.latest_checkpoint().endswith("model.ckpt-5")
    # The two iterations of the loop the input ended inside are reported like any others: the
    # same losses (and host_call values) as single steps on the same batches.
    single = str(tmp_path / "single")
    NPUEstimator(seeded_model_fn, model_dir=single, params={"host_call": True},
                 config=make_config(save_summary_steps=1)).train(
        input_fn_for(X[:40], Y[:40], batch=8, repeat=False), steps=30)
    for tag in ("loss", "host_loss", "host_mean_x"):
        looped = _scalars(model_dir, tag)
        assert sorted(looped) == [1, 2, 3, 4, 5]
        assert looped == pytest.approx(_scalars(single, tag), rel=1e-4)
    assert re.search(r"loss = [-\d.e]+ \(mean of the last 2 steps [-\d.e]+\), step = 5", caplog.text)
    # Ending exactly at a loop boundary (6 batches, loops of 3) stops cleanly too.
    est.train(input_fn_for(X[:48], Y[:48], batch=8, repeat=False), steps=30)
    assert est.get_variable_value("global_step") == 11


def test_rules_with_clear_errors(make_config, model_dir):
    est = NPUEstimator(seeded_model_fn, model_dir=model_dir, config=make_config(iterations_per_loop=4))
    with pytest.raises(ValueError, match=r"steps=10.*multiple of iterations_per_loop=4"):
        est.train(input_fn_for(X, Y), steps=10)
    est.train(input_fn_for(X, Y), steps=8)
    with pytest.raises(ValueError, match=r"max_steps=20 minus the restored global step 8 = 12|"
                                         r"multiple of iterations_per_loop=4"):
        est.train(input_fn_for(X, Y), max_steps=19)
    est.train(input_fn_for(X, Y), max_steps=20)
    assert est.get_variable_value("global_step") == 20

    def one_shot():
        return v1.data.make_one_shot_iterator(input_fn_for(X, Y)()).get_next()
    with pytest.raises(ValueError, match=r"iterations_per_loop=4 needs input_fn to return a tf.data.Dataset"):
        est.train(one_shot, steps=4)
    with pytest.raises(ValueError, match="enable_data_pre_proc"):
        make_config(iterations_per_loop=4, enable_data_pre_proc=False)


def test_max_steps_error_names_both_numbers(make_config, model_dir):
    est = NPUEstimator(seeded_model_fn, model_dir=model_dir, config=make_config(iterations_per_loop=4))
    est.train(input_fn_for(X, Y), steps=8)
    with pytest.raises(ValueError) as error:
        est.train(input_fn_for(X, Y), max_steps=19)
    assert "max_steps=19" in str(error.value) and "8" in str(error.value) and "iterations_per_loop=4" in str(error.value)


def test_get_next_runs_inside_the_loop(make_config, model_dir, monkeypatch):
    """enable_data_pre_proc=True with N > 1: the input's get_next is an op of the loop body, not of
    the graph the host runs."""
    graphs = []
    real_build_plan = estimator_module.build_plan

    def build_plan(options, mode):
        plan = real_build_plan(options, mode)
        plan.graph_transforms.append(lambda graph, mode: graphs.append(graph))
        return plan

    monkeypatch.setattr(estimator_module, "build_plan", build_plan)
    for n in (1, 5):
        NPUEstimator(seeded_model_fn, model_dir=os.path.join(model_dir, str(n)),
                     config=make_config(iterations_per_loop=n)).train(input_fn_for(X, Y), steps=5)
    single, looped = graphs
    assert "IteratorGetNext" in {op.type for op in single.get_operations()}
    outer = {"IteratorGetNext", "IteratorGetNextAsOptional"} & {op.type for op in looped.get_operations()}
    assert not outer, [op.name for op in looped.get_operations() if op.type in outer]
    body_ops = {node.op for f in looped.as_graph_def().library.function for node in f.node_def}
    assert "IteratorGetNext" in body_ops and "MatMul" in body_ops


class CrashAt(v1.train.SessionRunHook):
    """Simulates a crash (the process dying) once the global step reaches `step`."""

    def __init__(self, step):
        self.step = step

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_run(self, run_context, run_values):
        if run_context.session.run(self._global_step) >= self.step:
            raise RuntimeError("simulated crash")


@pytest.mark.parametrize("n", [1, 5])
def test_crash_and_restart_ends_with_the_same_weights(make_config, tmp_path, n):
    """Checkpoints hold the input pipeline's position (shuffle buffer included), so a restart
    continues the same data sequence and ends exactly where an uninterrupted run does."""
    config = dict(iterations_per_loop=n, save_checkpoints_steps=10, tf_random_seed=5)
    reference = NPUEstimator(seeded_model_fn, model_dir=str(tmp_path / "ref"), config=make_config(**config))
    reference.train(input_fn_for(X, Y, shuffle=True), max_steps=60)
    crashed = NPUEstimator(seeded_model_fn, model_dir=str(tmp_path / "crash"), config=make_config(**config))
    with pytest.raises(RuntimeError, match="simulated crash"):
        crashed.train(input_fn_for(X, Y, shuffle=True), max_steps=60, hooks=[CrashAt(35)])
    assert checkpoint_steps(str(tmp_path / "crash"))[-1] == 30
    crashed.train(input_fn_for(X, Y, shuffle=True), max_steps=60)
    for name in ("w1", "w2"):
        np.testing.assert_array_equal(crashed.get_variable_value(name), reference.get_variable_value(name))


def test_loop_mode_losses_are_every_iteration(make_config, model_dir):
    """The hook sees one call per loop; the loop returns the loss of each of its iterations."""
    seen = []

    class LoopLosses(v1.train.SessionRunHook):
        def before_run(self, run_context):
            return v1.train.SessionRunArgs(run_context.original_args.fetches["loss"])

        def after_run(self, run_context, run_values):
            seen.append(run_values.results)

    est = NPUEstimator(seeded_model_fn, model_dir=model_dir, config=make_config(iterations_per_loop=10))
    est.train(input_fn_for(X, Y), steps=30, hooks=[LoopLosses()])
    assert len(seen) == 3  # one host call per 10 steps
