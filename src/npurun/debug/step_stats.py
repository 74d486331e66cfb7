"""The runtime's per-op execution records (RunMetadata.step_stats) as plain values.

Rules:
- Requested with `trace_options()`: `RunOptions(trace_level=FULL_TRACE)` on a machine with a GPU
  (device tracer: GPU kernel times), SOFTWARE_TRACE without one: the executor records the same
  per-op statistics on CPUs, and FULL_TRACE there only adds TensorFlow's "GPU trace was not
  collected" warning at every traced run. TensorFlow fills `step_stats` with one
  NodeExecStats per executed node *instance*: an op inside a device loop appears once per
  iteration. Names are runtime names (after Grappler; loop bodies carry the loop's prefix).
- `_SOURCE` is the executor's start marker, not an op: it is dropped.
- Times are nanoseconds since the epoch (the `*_nanos` fields; microseconds x 1000 when a
  TensorFlow build leaves them empty); `end` is the start plus `all_end_rel`, as TensorFlow's own
  timeline draws it.
- The op type is the word after "= " in `timeline_label` ("loss = Mean(Relu, Const)" -> "Mean").
"""
from __future__ import annotations

from dataclasses import dataclass

PSEUDO_NODES = ("_SOURCE",)


def trace_options():
    """RunOptions asking for per-op step statistics (see the rules above)."""
    import tensorflow as tf

    run_options = tf.compat.v1.RunOptions
    gpu = bool(tf.config.list_physical_devices("GPU"))
    return run_options(trace_level=run_options.FULL_TRACE if gpu else run_options.SOFTWARE_TRACE)


@dataclass(frozen=True)
class NodeRun:
    name: str
    op_type: str
    device: str
    thread: int
    start_ns: int
    end_ns: int
    label: str


def _op_type(label: str) -> str:
    _, sep, rhs = label.partition(" = ")
    return rhs.split("(", 1)[0].strip() if sep else ""


def node_runs(step_stats) -> list[NodeRun]:
    """Every executed node instance, sorted by start time (ties keep the runtime's order)."""
    runs = []
    for device in step_stats.dev_stats:
        for node in device.node_stats:
            if node.node_name in PSEUDO_NODES:
                continue
            start = node.all_start_nanos or node.all_start_micros * 1000
            duration = node.all_end_rel_nanos or node.all_end_rel_micros * 1000
            runs.append(NodeRun(node.node_name, _op_type(node.timeline_label), device.device,
                                int(node.thread_id), int(start), int(start + duration), node.timeline_label))
    runs.sort(key=lambda run: run.start_ns)  # stable: equal starts keep recorded order
    return runs


def first_start(runs: list[NodeRun]) -> dict[str, int]:
    """Start time of each node's first execution."""
    starts: dict[str, int] = {}
    for run in runs:
        starts.setdefault(run.name, run.start_ns)
    return starts
