"""ProfilingConfig: a training trace row per iteration, a Chrome trace per host call, TensorBoard data."""
import csv
import glob
import json
import os
from collections import Counter

import pytest
import tensorflow as tf

import npurun
from npurun.debug.step_stats import node_runs

from .helpers import CaptureMetadata, looped_model, only_subdir, run_plan


def _options(output, iterations_per_loop=1, **profiling):
    profiling.setdefault("output", str(output))
    return npurun.NPURunConfig(iterations_per_loop=iterations_per_loop,
                               profiling_config=npurun.ProfilingConfig(True, json.dumps(profiling))).options


def _rows(run_dir):
    with open(os.path.join(run_dir, "training_trace.csv"), newline="") as f:
        return list(csv.DictReader(f))


def test_chrome_trace_is_valid_json_with_one_event_per_executed_op(tmp_path):
    capture = CaptureMetadata()
    run_plan(_options(tmp_path, task_trace="on"), runs=2, extra_hooks=[capture])
    run_dir = only_subdir(tmp_path)
    files = sorted(os.listdir(os.path.join(run_dir, "task_trace")))
    assert files == ["step_0.json", "step_1.json"]
    for step, metadata in enumerate(capture.metadata):
        with open(os.path.join(run_dir, "task_trace", f"step_{step}.json")) as f:
            trace = json.load(f)
        events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        executed = Counter(n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats
                           if n.node_name != "_SOURCE")
        assert Counter(e["name"] for e in events) == executed
        names = {e["name"]: e for e in events}
        # the executed kernel's type: oneDNN's when it rewrote the MatMul (CPU traces without a GPU
        # are software traces, which name the kernel that ran)
        assert names["matmul"]["cat"] in ("MatMul", "_MklMatMul") and names["loss"]["cat"] == "Sum"
        assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in events)
        assert trace["otherData"]["step"] == step
        assert any(e["ph"] == "M" and e["name"] == "process_name" for e in trace["traceEvents"])


def test_training_trace_has_one_row_per_iteration_in_time_order(tmp_path):
    run_plan(_options(tmp_path, training_trace="on"), runs=4)
    rows = _rows(only_subdir(tmp_path))
    assert [int(r["iteration"]) for r in rows] == [0, 1, 2, 3]
    for row in rows:
        start, fp, bp, end = (int(row[k]) for k in ("iteration_start_ns", "fp_start_ns", "bp_end_ns",
                                                    "iteration_end_ns"))
        assert start <= fp <= bp <= end
        assert float(row["iteration_time_us"]) == pytest.approx((end - start) / 1000, abs=1e-3)
        assert float(row["fp_bp_time_us"]) == pytest.approx((bp - fp) / 1000, abs=1e-3)
    ends = [int(r["iteration_end_ns"]) for r in rows]
    assert ends == sorted(ends)
    assert not os.path.exists(os.path.join(only_subdir(tmp_path), "task_trace"))


def test_fp_and_bp_points_are_the_named_ops_times(tmp_path):
    capture = CaptureMetadata()
    run_plan(_options(tmp_path, training_trace="on", fp_point="matmul", bp_point="gradients/matmul_grad/MatMul_1"),
             runs=2, extra_hooks=[capture])
    rows = _rows(only_subdir(tmp_path))
    for row, metadata in zip(rows, capture.metadata):
        runs = {r.name: r for r in node_runs(metadata.step_stats)}
        assert int(row["fp_start_ns"]) == runs["matmul"].start_ns
        assert int(row["bp_end_ns"]) == runs["gradients/matmul_grad/MatMul_1"].end_ns


def test_device_loop_gives_one_trace_per_host_call_and_one_row_per_iteration(tmp_path, caplog):
    options = _options(tmp_path, iterations_per_loop=3, training_trace="on", task_trace="on", bp_point="update")
    run_plan(options, build=lambda: looped_model(3), runs=2)
    assert "does not run once per iteration" not in caplog.text  # "update" matched inside the loop body
    run_dir = only_subdir(tmp_path)
    assert sorted(os.listdir(os.path.join(run_dir, "task_trace"))) == ["step_0.json", "step_3.json"]
    rows = _rows(run_dir)
    assert [int(r["iteration"]) for r in rows] == [0, 1, 2, 3, 4, 5]
    assert [int(r["host_call"]) for r in rows] == [0, 0, 0, 1, 1, 1]
    for before, after in zip(rows, rows[1:]):
        if before["host_call"] == after["host_call"]:  # iterations of one call follow each other
            assert int(after["iteration_start_ns"]) == int(before["iteration_end_ns"])
            assert int(before["bp_end_ns"]) <= int(after["fp_start_ns"])
    with open(os.path.join(run_dir, "task_trace", "step_3.json")) as f:
        events = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    # The loop body's update op runs once per iteration: three events in one host call's trace.
    assert sum(e["name"].endswith("/update") for e in events) == 3


def test_tensorboard_event_file_holds_the_graph_and_each_host_calls_run_metadata(tmp_path):
    run_plan(_options(tmp_path, task_trace="on"), runs=2)
    (events_file,) = glob.glob(os.path.join(only_subdir(tmp_path), "tensorboard", "events.out.tfevents.*"))
    tags, has_graph = [], False
    for event in tf.compat.v1.train.summary_iterator(events_file):
        has_graph |= bool(event.graph_def)
        if event.HasField("tagged_run_metadata"):
            tags.append(event.tagged_run_metadata.tag)
            metadata = tf.compat.v1.RunMetadata.FromString(event.tagged_run_metadata.run_metadata)
            assert metadata.step_stats.dev_stats
    assert has_graph and tags == ["step_0", "step_1"]


def test_eval_mode_profiles_into_its_own_directory(tmp_path):
    run_plan(_options(tmp_path, training_trace="on"), runs=2, mode="eval")
    run_dir = only_subdir(tmp_path)
    assert os.path.basename(run_dir).startswith("eval-")
    assert [int(r["iteration"]) for r in _rows(run_dir)] == [0, 1]


def test_profiling_prints_no_warning_per_traced_run(tmp_path, capfd):
    import tensorflow as tf

    run_plan(_options(tmp_path, task_trace="on", training_trace="on"), runs=3)
    err = capfd.readouterr().err
    if not tf.config.list_physical_devices("GPU"):  # FULL_TRACE without a GPU: one warning per run
        assert "GPU trace was not collected" not in err
    assert err.count("\n") < 3, err
