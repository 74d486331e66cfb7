"""DumpConfig(enable_dump_debug=True): only the ops whose outputs hold inf/NaN, first one first."""
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import npurun
from npurun.debug.dump_files import open_dump

from .helpers import CaptureMetadata, linear_model, only_subdir, run_plan


def overflowing_model():
    """The finite training step plus a chain where inf first appears at "z_origin", a name that
    sorts last (and is created after the training ops): only execution order can put it first."""
    model = linear_model()
    big = tf.constant([3e38, 1.0], tf.float32, name="big")
    origin = tf.multiply(big, 10.0, name="z_origin")               # [inf, 10]: the injected overflow
    spread = tf.subtract(origin, origin, name="m_spread")          # [nan, 0]
    total = tf.reduce_sum(spread, name="a_total")                  # nan
    finite = tf.multiply(big, 0.5, name="b_finite")                # large but finite: not reported
    model["fetch"] = [model["train"], model["loss"], total, finite]
    return model


def _options(dump_path, **kwargs):
    return npurun.NPURunConfig(dump_config=npurun.DumpConfig(enable_dump_debug=True, dump_path=dump_path,
                                                             **kwargs)).options


def test_names_the_op_that_produced_the_injected_inf_first(dump_path, caplog):
    with caplog.at_level(logging.WARNING, logger="npurun.debug.overflow"):
        run_plan(_options(dump_path), build=overflowing_model, runs=1)
    dump = open_dump(only_subdir(dump_path))
    records = sorted(dump.records, key=lambda r: r["order"])
    assert [r["op"] for r in records] == ["z_origin", "m_spread", "a_total"]
    assert [r["order"] for r in records] == [0, 1, 2]
    assert records[0]["first"] is True and not any(r["first"] for r in records[1:])
    assert {r["kind"] for r in records} == {"overflow"}
    np.testing.assert_array_equal(dump.load(records[0]), np.array([np.inf, 10.0], np.float32))
    assert records[0]["stats"]["pos_inf"] == 1
    assert np.isnan(dump.load(records[2]))
    assert "the first is z_origin (Mul)" in caplog.text


def test_a_finite_run_writes_nothing(dump_path):
    run_plan(_options(dump_path), runs=3)
    assert os.listdir(dump_path) == []


@pytest.mark.parametrize("mode", ["aicore_overflow", "atomic_overflow", "all"])
def test_every_dump_debug_mode_detects_inf_and_nan(dump_path, mode):
    run_plan(_options(dump_path, dump_debug_mode=mode), build=overflowing_model, runs=1)
    assert [r["op"] for r in open_dump(only_subdir(dump_path)).records][0] == "z_origin"


def test_dump_step_selects_the_checked_steps_and_others_cost_no_trace(dump_path):
    capture = CaptureMetadata()
    run_plan(_options(dump_path, dump_step="2"), build=overflowing_model, runs=4, extra_hooks=[capture])
    assert {r["step"] for r in open_dump(only_subdir(dump_path)).records} == {2}
    traced = [bool(m.step_stats.dev_stats) for m in capture.metadata]
    assert traced == [False, False, True, False]


def test_stats_data_keeps_counts_without_tensor_files(dump_path):
    run_plan(_options(dump_path, dump_data="stats"), build=overflowing_model, runs=1)
    records = open_dump(only_subdir(dump_path)).records
    assert all(r["file"] is None for r in records)
    assert [r["stats"]["nan"] for r in sorted(records, key=lambda r: r["order"])] == [0, 1, 1]


def test_tensor_and_overflow_dumps_share_the_session_directory(dump_path):
    options = npurun.NPURunConfig(dump_config=npurun.DumpConfig(
        enable_dump=True, enable_dump_debug=True, dump_path=dump_path, dump_layer="b_finite")).options
    run_plan(options, build=overflowing_model, runs=1)
    records = open_dump(only_subdir(dump_path)).records
    assert {(r["kind"], r["op"]) for r in records} == {("tensor", "b_finite"), ("overflow", "z_origin"),
                                                         ("overflow", "m_spread"), ("overflow", "a_total")}
