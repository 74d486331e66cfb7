"""ProfilingHook: training trace and per-op timelines (`ProfilingConfig(enable_profiling=True)`).

Mechanism: every host call runs with `RunOptions(trace_level=FULL_TRACE)`; TensorFlow returns the
executed ops' times in `RunMetadata.step_stats`, which `after_run` turns into files. The hook
exists only when profiling is on and a trace is requested, so by default nothing runs per step.

Output, in one directory per session `<output>/<mode>-<timestamp>/` (rules):
- `training_trace: "on"` -> `training_trace.csv`: one row per iteration (columns and their
  meaning: `training_trace`), appended after each host call; `fp_point` / `bp_point` name the ops
  marking forward start and backward end.
- `task_trace: "on"` -> `task_trace/step_<first step of the host call>.json`, a Chrome trace
  (`chrome_trace`), one per host call; and `tensorboard/`, an event file with the graph and each
  host call's RunMetadata (tag `step_<N>`), shown by TensorBoard's Graphs dashboard
  ("Session runs": per-node compute time and memory).
- Other NPU profiling switches (aicpu, l2, hccl, aic_metrics, ...) have no CPU/GPU counterpart.
"""
from __future__ import annotations

import csv
import logging
import os

import tensorflow as tf

from .. import safe_files
from .chrome_trace import chrome_trace, write_chrome_trace
from .dump_files import new_run_dir
from .step_stats import node_runs, trace_options
from .steps import StepTracker
from .training_trace import COLUMNS, iterations

log = logging.getLogger(__name__)


class ProfilingHook(tf.compat.v1.train.SessionRunHook):
    def __init__(self, profiling_options, mode: str, steps_per_run: int = 1):
        self._output = profiling_options.get("output")
        self._training_trace = profiling_options.get("training_trace") == "on"
        self._task_trace = profiling_options.get("task_trace") == "on"
        self._fp = profiling_options.get("fp_point", "") or ""
        self._bp = profiling_options.get("bp_point", "") or ""
        self._mode = mode
        self._tracker = StepTracker(mode, steps_per_run)
        self._host_calls = 0
        self._warned = set()
        self.path = None  # the session's output directory, created on the first host call
        self._summary_writer = None

    def begin(self):
        self._tracker.begin()
        self._graph = tf.compat.v1.get_default_graph()

    def after_create_session(self, session, coord):
        self._tracker.sync(session)

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(None, options=trace_options())

    def after_run(self, run_context, run_values):
        step = self._tracker.step
        span = self._tracker.advance(run_context.session)
        metadata = run_values.run_metadata
        runs = node_runs(metadata.step_stats)
        if not runs:
            return  # a TensorFlow build without tracing support: nothing to write
        if self.path is None:
            self.path = new_run_dir(self._output, self._mode)
        if self._training_trace:
            self._write_training_trace(runs, step, span)
        if self._task_trace:
            safe_files.make_dirs_under(self.path, "task_trace", "profiling folder")
            write_chrome_trace(os.path.join(self.path, "task_trace", f"step_{step}.json"),
                               chrome_trace(runs, step, span))
            self._tensorboard().add_run_metadata(metadata, f"step_{step}", global_step=step)
        self._host_calls += 1

    def end(self, session):
        if self._summary_writer is not None:
            self._summary_writer.close()

    def _write_training_trace(self, runs, step, span) -> None:
        rows, missing = iterations(runs, step, span, self._host_calls, self._fp, self._bp)
        for point in set(missing) - self._warned:
            self._warned.add(point)
            log.warning("ProfilingConfig: fp_point/bp_point %r does not run once per iteration in the executed "
                        "graph (see the task trace for runtime names); using the iteration's first/last op",
                        point)
        path = os.path.join(self.path, "training_trace.csv")
        with safe_files.open_append(path, "training trace file", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=COLUMNS)
            if out.tell() == 0:  # a new file
                writer.writeheader()
            writer.writerows(row.row() for row in rows)

    def _tensorboard(self):
        if self._summary_writer is None:
            # FileWriter refuses eager mode; inside the graph it writes graph-mode event files.
            with self._graph.as_default():
                # An unguessable event-file name: TensorFlow follows a link planted under a predictable one.
                self._summary_writer = tf.compat.v1.summary.FileWriter(
                    os.path.join(self.path, "tensorboard"), graph=self._graph,
                    filename_suffix=safe_files.unguessable_suffix())
        return self._summary_writer
