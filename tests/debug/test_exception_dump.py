"""enable_exception_dump: a failing op's identity, error and recomputable inputs, then the same error."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import npurun
from npurun.debug.dump_files import open_dump
from npurun.debug.exception_dump import exception_dump, run_with_exception_dump

from .helpers import only_subdir

PARAMS = np.array([1.0, 2.0, 3.0], np.float32)


def gather_graph():
    params = tf.constant(PARAMS, name="params")
    indices = tf.compat.v1.placeholder(tf.int32, [None], name="indices")
    gathered = tf.gather(params, indices, name="bad_gather")
    return indices, tf.reduce_sum(gathered, name="total")


def _options(level=1):
    return npurun.NPURunConfig(enable_exception_dump=level).options


def _error_json(cwd):
    run_dir = only_subdir(os.path.join(cwd, "exception_dump"))
    with open(os.path.join(run_dir, "error.json")) as f:
        return run_dir, json.load(f)


@pytest.mark.parametrize("level", [1, 2])
def test_out_of_range_gather_is_dumped_with_its_inputs_and_reraised(in_tmp_cwd, level):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        indices, total = gather_graph()
        feeds = {indices: [0, 7]}
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            with exception_dump(_options(level), session, feeds, mode="train"):
                session.run(total, feeds)
    run_dir, info = _error_json(in_tmp_cwd)
    assert str(run_dir) in str(raised.value) and "indices[1] = 7 is not in [0, 3)" in str(raised.value)
    assert isinstance(raised.value.__cause__, tf.errors.InvalidArgumentError)
    assert raised.value.op.name == "bad_gather"
    assert (info["op"], info["type"], info["error"], info["mode"]) == ("bad_gather", "GatherV2",
                                                                       "InvalidArgumentError", "train")
    assert "indices[1] = 7" in info["message"]
    assert [(i["slot"], i["tensor"], i["reason"]) for i in info["inputs"]] == [
        (0, "params:0", None), (1, "indices:0", None), (2, "bad_gather/axis:0", None)]
    dump = open_dump(run_dir)  # the inputs are a regular dump: `npurun dump show` reads them
    values = {r["slot"]: dump.load(r) for r in dump.records}
    np.testing.assert_array_equal(values[0], PARAMS)
    np.testing.assert_array_equal(values[1], [0, 7])
    assert values[2] == 0
    assert {(r["kind"], r["op"], r["io"]) for r in dump.records} == {("exception", "bad_gather", "input")}


def test_off_by_default_the_error_passes_untouched(in_tmp_cwd):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        indices, total = gather_graph()
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            with exception_dump(npurun.NPURunConfig().options, session, {indices: [9]}):
                session.run(total, {indices: [9]})
    assert "exception dump" not in str(raised.value)
    assert not os.path.exists(in_tmp_cwd / "exception_dump")


def test_inputs_from_stateful_ops_are_listed_with_the_reason_not_recomputed(in_tmp_cwd):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        params = tf.constant(PARAMS, name="params")
        dataset = tf.data.Dataset.from_tensors(tf.constant([5], tf.int32))
        indices = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next(name="next_indices")
        total = tf.reduce_sum(tf.gather(params, indices, name="bad_gather"))
        with pytest.raises(tf.errors.InvalidArgumentError):
            run_with_exception_dump(_options(), session, total, mode="eval")
    run_dir, info = _error_json(in_tmp_cwd)
    reasons = {i["slot"]: i["reason"] for i in info["inputs"]}
    assert reasons[0] is None and reasons[2] is None
    assert "stateful op 'next_indices'" in reasons[1]
    assert sorted(r["slot"] for r in open_dump(run_dir).records) == [0, 2]


def test_monitored_session_recomputes_through_the_raw_session_without_hooks(in_tmp_cwd):
    class CountRuns(tf.compat.v1.train.SessionRunHook):
        calls = 0

        def before_run(self, run_context):
            CountRuns.calls += 1

    with tf.Graph().as_default():
        indices, total = gather_graph()
        with tf.compat.v1.train.MonitoredSession(hooks=[CountRuns()]) as session:
            with pytest.raises(tf.errors.InvalidArgumentError, match="exception dump"):
                with exception_dump(_options(), session, {indices: [4]}, mode="predict"):
                    session.run(total, {indices: [4]})
    assert CountRuns.calls == 1  # the failing run only; recomputing the inputs ran no hook
    run_dir, info = _error_json(in_tmp_cwd)
    assert os.path.basename(run_dir).startswith("predict-")
    assert [i["file"] is not None for i in info["inputs"]] == [True, True, True]


def test_end_of_input_is_not_an_exception_to_dump(in_tmp_cwd):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        dataset = tf.data.Dataset.from_tensors(1)
        element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        session.run(element)
        with pytest.raises(tf.errors.OutOfRangeError):
            run_with_exception_dump(_options(), session, element)
    assert not os.path.exists(in_tmp_cwd / "exception_dump")


def test_unfed_placeholder_input_is_reported_not_recomputed(in_tmp_cwd):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        y = tf.compat.v1.placeholder_with_default(tf.constant([0], tf.int32), [None], name="y")
        total = tf.gather(x, y + 10, name="bad_gather")
        with pytest.raises(tf.errors.InvalidArgumentError):
            # Fed through an alias the helper is not told about: recomputing must not guess.
            with exception_dump(_options(), session, feed_dict=None):
                session.run(total, {x: PARAMS})
    _, info = _error_json(in_tmp_cwd)
    assert "placeholder 'x'" in info["inputs"][0]["reason"]
    assert info["inputs"][1]["reason"] is None
