"""End to end through NPUEstimator: its HookRunner drives the plan's dump, overflow and profiling hooks."""
import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import npurun
from npurun.debug.dump_files import open_dump
from npurun.debug.exception_dump import exception_dump
from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator

from .helpers import only_subdir

v1 = tf.compat.v1
X = np.arange(32 * 4, dtype=np.float32).reshape(32, 4) / 100.0
Y = (np.arange(32) % 3).astype(np.int32)
BATCH = 8


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(BATCH)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", [4, 3], initializer=v1.constant_initializer(0.1))
    logits = tf.matmul(features["x"], w, name="logits")
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss)
    minimize = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    # A side computation that overflows without touching the loss (whose NaN would stop training).
    side = tf.multiply(tf.reduce_max(features["x"]), 1e38, name="side_big")
    side = tf.multiply(side, 1e3, name="side_overflow")
    return EstimatorSpec(mode, loss=loss, train_op=tf.group(minimize, side))


def test_train_dumps_same_run_tensors_and_overflows_through_the_estimator(tmp_path):
    dump_path = tmp_path / "dump"
    dump_path.mkdir()
    config = npurun.NPURunConfig(model_dir=str(tmp_path / "model"), save_checkpoints_steps=0, dump_config=npurun.DumpConfig(
        enable_dump=True, enable_dump_debug=True, dump_path=str(dump_path), dump_step="1|3", dump_mode="all",
        dump_layer="logits"))
    NPUEstimator(model_fn, config=config).train(input_fn, steps=4)
    dump = open_dump(only_subdir(dump_path))
    tensors = [r for r in dump.records if r["kind"] == "tensor"]
    assert {r["step"] for r in tensors} == {1, 3}
    for step in (1, 3):
        by_slot = {(r["io"], r["slot"]): dump.load(r) for r in tensors if r["step"] == step}
        batch = X[(step * BATCH) % 32:(step * BATCH) % 32 + BATCH]
        np.testing.assert_array_equal(by_slot[("input", 0)], batch)            # the batch of that step
        np.testing.assert_allclose(by_slot[("output", 0)], batch @ by_slot[("input", 1)], rtol=1e-6)
    overflows = [r for r in dump.records if r["kind"] == "overflow"]
    assert {r["step"] for r in overflows} == {1, 3}
    assert [r["op"] for r in overflows if r["first"]] == ["side_overflow", "side_overflow"]


def test_train_and_evaluate_profiles_each_mode(tmp_path):
    output = tmp_path / "prof"
    config = npurun.NPURunConfig(model_dir=str(tmp_path / "model"), profiling_config=npurun.ProfilingConfig(
        True, json.dumps({"output": str(output), "training_trace": "on", "task_trace": "on",
                          "fp_point": "logits"})))
    estimator = NPUEstimator(model_fn, config=config)
    estimator.train(input_fn, steps=3)
    estimator.evaluate(input_fn, steps=2)
    eval_name, train_name = sorted(os.listdir(output))  # one directory per session, named by mode
    assert eval_name.startswith("eval-") and train_name.startswith("train-")
    train_dir, eval_dir = os.path.join(output, train_name), os.path.join(output, eval_name)
    with open(os.path.join(train_dir, "training_trace.csv")) as f:
        assert [int(r["iteration"]) for r in csv.DictReader(f)] == [0, 1, 2]
    assert sorted(os.listdir(os.path.join(train_dir, "task_trace"))) == ["step_0.json", "step_1.json",
                                                                         "step_2.json"]
    with open(os.path.join(train_dir, "task_trace", "step_1.json")) as f:
        names = [e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    assert names.count("logits") == 1
    assert len(os.listdir(os.path.join(eval_dir, "task_trace"))) == 2


def test_exception_dump_wraps_the_estimators_hook_runner(tmp_path, monkeypatch):
    """The call the Estimator makes around each run (see docs/debug.md), with its own HookRunner."""
    from npurun.estimator.hooks import HookRunner

    monkeypatch.chdir(tmp_path)
    options = npurun.NPURunConfig(enable_exception_dump=1).options
    with tf.Graph().as_default() as graph:
        params = tf.constant([1.0, 2.0], name="params")
        index = tf.Variable(5, name="index")
        bad = tf.gather(params, index, name="bad_gather")
        runner = HookRunner([])
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="exception dump"):
                with exception_dump(options, sess, mode=ModeKeys.TRAIN):
                    runner.run(sess, bad)
    run_dir = only_subdir(tmp_path / "exception_dump")
    values = {r["slot"]: open_dump(run_dir).load(r) for r in open_dump(run_dir).records}
    assert values[0].tolist() == [1.0, 2.0] and values[1] == 5


def _gather_model_fn(features, labels, mode, params):
    """Gathers row params["index"] of a 2-row table: index 5 fails at run time, in every mode."""
    table = tf.constant([[1.0], [2.0]], name="table")
    index = tf.constant(params["index"], name="index")
    picked = tf.gather(table, index, name="bad_gather")
    loss = tf.reduce_mean(features["x"]) * picked[0] + 0.0 * v1.get_variable("w", [1])[0]
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"p": tf.fill([tf.shape(features["x"])[0]], picked[0])})
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


@pytest.mark.parametrize("mode", ["train", "evaluate", "predict"])
def test_estimator_writes_an_exception_dump_for_a_failing_op(tmp_path, monkeypatch, mode):
    """NPUEstimator itself wraps its runs: the failing op is named, its inputs dumped, the path in the error."""
    monkeypatch.chdir(tmp_path)
    config = npurun.NPURunConfig(enable_exception_dump=1, save_checkpoints_steps=0, log_step_count_steps=None)
    model_dir = str(tmp_path / "model")
    if mode != "train":  # evaluate and predict need a checkpoint, from a model that works
        saving = npurun.NPURunConfig(log_step_count_steps=None)
        NPUEstimator(_gather_model_fn, model_dir=model_dir, config=saving, params={"index": 1}).train(input_fn, steps=1)
    est = NPUEstimator(_gather_model_fn, model_dir=model_dir, config=config, params={"index": 5})
    with pytest.raises(tf.errors.InvalidArgumentError, match="exception dump") as caught:
        if mode == "train":
            est.train(input_fn, steps=2)
        elif mode == "evaluate":
            est.evaluate(input_fn, steps=1)
        else:
            list(est.predict(input_fn))
    run_dir = only_subdir(tmp_path / "exception_dump")
    assert str(run_dir) in str(caught.value)
    with open(os.path.join(run_dir, "error.json"), encoding="utf-8") as handle:
        error = json.load(handle)
    assert error["op"].endswith("bad_gather")
    values = [open_dump(run_dir).load(r) for r in open_dump(run_dir).records]
    assert any(np.array_equal(v, [[1.0], [2.0]]) for v in values)
    assert any(np.ndim(v) == 0 and v == 5 for v in values)


def test_without_the_option_no_exception_dump_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = npurun.NPURunConfig(save_checkpoints_steps=0, log_step_count_steps=None)
    est = NPUEstimator(_gather_model_fn, model_dir=str(tmp_path / "model"), config=config, params={"index": 5})
    with pytest.raises(tf.errors.InvalidArgumentError):
        est.train(input_fn, steps=2)
    assert not (tmp_path / "exception_dump").exists()
