"""A Chrome trace (Trace Event Format, JSON object form) of one host call's executed ops.

Opens in https://ui.perfetto.dev and chrome://tracing. Rules:
- One complete event (`"ph": "X"`) per executed node instance (`step_stats.node_runs`): name =
  node name, cat = op type, ts/dur in microseconds (fractional: nanosecond precision) relative
  to the host call's first op; an op inside a device loop has one event per iteration.
- One process per device (`"M"` process_name metadata events), one track per executor thread.
- `otherData` holds the step, the steps covered and the absolute start (ns since the epoch).
"""
from __future__ import annotations

import json

from .. import safe_files
from .step_stats import NodeRun


def chrome_trace(runs: list[NodeRun], step: int, span: int = 1) -> dict:
    t0 = min((r.start_ns for r in runs), default=0)
    devices = {}
    events = []
    for r in runs:
        pid = devices.setdefault(r.device, len(devices))
        events.append({"ph": "X", "name": r.name, "cat": r.op_type or "op", "pid": pid, "tid": r.thread,
                       "ts": (r.start_ns - t0) / 1000.0, "dur": (r.end_ns - r.start_ns) / 1000.0,
                       "args": {"op": r.op_type, "label": r.label, "step": step}})
    metadata = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": device}}
                for device, pid in devices.items()]
    return {"traceEvents": metadata + events, "displayTimeUnit": "ns",
            "otherData": {"step": step, "steps": span, "start_epoch_ns": t0}}


def write_chrome_trace(path: str, trace: dict) -> None:
    with safe_files.replacing(path, "w", "task trace file") as out:
        json.dump(trace, out)
