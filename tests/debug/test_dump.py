"""DumpConfig(enable_dump=True): the selected tensors of the selected steps, as the run computed them."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import npurun
from npurun.debug.dump_files import open_dump

from .helpers import X, linear_model, looped_model, only_subdir, reference_weights, run_plan


def _dump(dump_path, runs=5, mode="train", build=linear_model, **dump_kwargs):
    options = npurun.NPURunConfig(dump_config=npurun.DumpConfig(enable_dump=True, dump_path=dump_path,
                                                                **dump_kwargs)).options
    _, model, results = run_plan(options, build=build, runs=runs, mode=mode)
    return open_dump(only_subdir(dump_path)), results


def test_outputs_equal_a_direct_computation_at_exactly_the_selected_steps(dump_path):
    dump, _ = _dump(dump_path, runs=6, dump_step="1|3-4", dump_layer="matmul loss")
    weights = reference_weights(6)
    assert {r["step"] for r in dump.records} == {1, 3, 4}
    assert os.path.basename(dump.path).startswith("train-")
    for record in dump.records:
        value = dump.load(record)
        expected_matmul = X @ weights[record["step"]]  # w *before* the step: the same run, not a re-run
        expected = expected_matmul if record["op"] == "matmul" else np.sum(expected_matmul ** 2)
        np.testing.assert_allclose(value, expected, rtol=1e-6)
        assert record["io"] == "output" and record["slot"] == 0 and record["file"].endswith(".npy")
    by_op = {(r["step"], r["op"]): r for r in dump.records}
    assert set(by_op) == {(s, op) for s in (1, 3, 4) for op in ("matmul", "loss")}
    matmul = by_op[(3, "matmul")]
    assert (matmul["type"], matmul["shape"], matmul["dtype"], matmul["tensor"]) == ("MatMul", [2, 1], "float32",
                                                                                    "matmul:0")
    assert by_op[(3, "loss")]["type"] == "Sum" and by_op[(3, "loss")]["shape"] == []


def test_index_is_one_json_object_per_tensor_with_the_documented_keys(dump_path):
    dump, _ = _dump(dump_path, runs=1, dump_step="0", dump_layer="matmul")
    lines = open(os.path.join(dump.path, "index.jsonl")).read().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert {"kind", "step", "op", "type", "io", "slot", "tensor", "shape", "dtype", "file", "stats",
            "order"} <= set(record)
    assert record["file"] == "step_0/matmul.output.0.npy"


def test_input_mode_dumps_each_input_slot_with_the_value_the_op_received(dump_path):
    dump, _ = _dump(dump_path, runs=3, dump_step="2", dump_mode="input", dump_layer="matmul")
    records = {(r["io"], r["slot"]): r for r in dump.records}
    assert set(records) == {("input", 0), ("input", 1)}
    np.testing.assert_array_equal(dump.load(records[("input", 0)]), X)
    np.testing.assert_allclose(dump.load(records[("input", 1)]), reference_weights(2)[2], rtol=1e-6)
    assert records[("input", 0)]["tensor"] == "x:0"


def test_all_mode_dumps_inputs_then_outputs(dump_path):
    dump, _ = _dump(dump_path, runs=1, dump_step="0", dump_mode="all", dump_layer="square")
    assert [(r["io"], r["slot"]) for r in dump.records] == [("input", 0), ("output", 0)]
    np.testing.assert_allclose(dump.load(dump.records[1]), dump.load(dump.records[0]) ** 2, rtol=1e-6)


def test_no_dump_layer_dumps_every_executed_op_in_topological_order(dump_path):
    dump, _ = _dump(dump_path, runs=1, dump_step="0")
    ops = [r["op"] for r in dump.records]
    for earlier, later in (("x", "matmul"), ("matmul", "square"), ("square", "loss")):
        assert ops.index(earlier) < ops.index(later)
    assert any(op.startswith("train/update_w") or op.startswith("gradients/") for op in ops)


def test_dump_adds_no_work_ops_outside_the_run_are_neither_dumped_nor_run(dump_path):
    def model_with_unused_counter():
        model = linear_model()
        counter = tf.compat.v1.get_variable("counter", initializer=0.0, trainable=False)
        tf.identity(counter.assign_add(1.0), name="side_effect")  # not needed by the training step
        model["counter"] = counter
        model["fetch"] = [model["train"], model["loss"], counter.read_value()]
        return model

    dump, results = _dump(dump_path, runs=3, build=model_with_unused_counter)  # every step, every op
    assert [r[2] for r in results] == [0.0, 0.0, 0.0]
    assert not any(r["op"].startswith("side_effect") or r["op"].startswith("AssignAdd") for r in dump.records)
    assert {r["step"] for r in dump.records} == {0, 1, 2}


def test_stats_mode_writes_statistics_and_no_tensor_files(dump_path):
    dump, _ = _dump(dump_path, runs=1, dump_step="0", dump_layer="x", dump_data="stats")
    (record,) = dump.records
    assert record["file"] is None
    assert not any(name.endswith(".npy") for _, _, files in os.walk(dump.path) for name in files)
    assert record["stats"] == {"size": 4, "min": 1.0, "max": 4.0, "mean": 2.5, "std": pytest.approx(np.std(X)),
                               "nan": 0, "pos_inf": 0, "neg_inf": 0, "zeros": 0}


def test_eval_mode_numbers_steps_by_run_within_the_session(dump_path):
    dump, _ = _dump(dump_path, runs=3, mode="eval", dump_step="1", dump_layer="matmul")
    assert [r["step"] for r in dump.records] == [1]
    assert os.path.basename(dump.path).startswith("eval-")


def test_device_loop_host_call_is_dumped_when_any_of_its_steps_is_selected(dump_path):
    options = npurun.NPURunConfig(iterations_per_loop=3, dump_config=npurun.DumpConfig(
        enable_dump=True, dump_path=dump_path, dump_step="4", dump_layer="x")).options
    run_plan(options, build=lambda: looped_model(3), runs=3)
    dump = open_dump(only_subdir(dump_path))
    # Host calls cover steps 0-2, 3-5, 6-8: only the second covers step 4.
    assert {(r["step"], r.get("last_step")) for r in dump.records} == {(3, 5)}


def test_nothing_is_written_when_no_selected_step_runs(dump_path):
    options = npurun.NPURunConfig(dump_config=npurun.DumpConfig(enable_dump=True, dump_path=dump_path,
                                                                dump_step="100")).options
    run_plan(options, runs=2)
    assert os.listdir(dump_path) == []
