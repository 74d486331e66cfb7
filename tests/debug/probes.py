"""Probes run under both oneDNN settings (tests/onednn_probes.py): the profiling Chrome trace."""
from __future__ import annotations

import json
import os

import npurun
from npurun.debug.step_stats import node_runs

from .helpers import CaptureMetadata, only_subdir, run_plan


def probe_chrome_trace(workdir):
    """Two profiled steps of the linear model: the trace files and, per step, what the executor
    reported running ({node name: [count, op type]} from the run's step stats)."""
    capture = CaptureMetadata()
    options = npurun.NPURunConfig(profiling_config=npurun.ProfilingConfig(
        True, json.dumps({"output": workdir, "task_trace": "on"}))).options
    run_plan(options, runs=2, extra_hooks=[capture])
    run_dir = only_subdir(workdir)
    steps = []
    for metadata in capture.metadata:
        executed = {}
        for run in node_runs(metadata.step_stats):
            count = executed.get(run.name, [0, None])[0]
            executed[run.name] = [count + 1, run.op_type]
        steps.append(executed)
    return {"trace_dir": os.path.join(run_dir, "task_trace"), "executed": steps}
