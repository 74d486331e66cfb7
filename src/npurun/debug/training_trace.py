"""Per-iteration times from one host call's step statistics (ProfilingConfig `training_trace`).

Rules:
- Ops are the executed nodes (`step_stats.node_runs`) except runtime bookkeeping (names starting
  with "_": `_retval`, `_arg`, `_Send`/`_Recv`, `__copy`), which belong to no iteration.
- One host call covering N steps (N = `iterations_per_loop`) has N iterations. N = 1: every op is
  in the iteration. N > 1: the loop body's ops run exactly N times (loop conditions N + 1 times,
  code around the loop once); the i-th run of each body op belongs to iteration i.
- Iteration i starts where iteration i-1 ended (the first starts with the host call's first op)
  and ends at the end of its last op; the last iteration also takes the code after the loop.
- forward start = start of the `fp_point` op's run in that iteration; backward end = end of the
  `bp_point` op's run. A point matches an op named exactly so, or, when none is, an op whose name
  ends in "/<point>" (inside a device loop the runtime prefixes the loop's name). Empty point
  (the default): the iteration's first op's start / last op's end. A point that does not run once
  per iteration falls back to the default, and `missing` says so.
- Points in time are integer nanoseconds since the epoch (`*_ns`; a float of microseconds since
  the epoch would keep only quarter-microsecond precision); durations are microseconds with
  nanosecond precision (`*_us`): iteration_time = end - start; fp_bp_time = bp_end - fp_start;
  grad_refresh_bound = end - bp_end; data_aug_bound = fp_start - start (the NPU's names).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .step_stats import NodeRun

COLUMNS = ("host_call", "iteration", "iteration_start_ns", "fp_start_ns", "bp_end_ns", "iteration_end_ns",
           "iteration_time_us", "fp_bp_time_us", "grad_refresh_bound_us", "data_aug_bound_us")


@dataclass(frozen=True)
class Iteration:
    host_call: int
    iteration: int
    start_ns: int
    fp_start_ns: int
    bp_end_ns: int
    end_ns: int

    def row(self) -> dict:
        us = lambda ns: round(ns / 1000.0, 3)  # noqa: E731 - durations: microseconds, ns precision
        return dict(zip(COLUMNS, (
            self.host_call, self.iteration, self.start_ns, self.fp_start_ns, self.bp_end_ns,
            self.end_ns, us(self.end_ns - self.start_ns), us(self.bp_end_ns - self.fp_start_ns),
            us(self.end_ns - self.bp_end_ns), us(self.fp_start_ns - self.start_ns))))


def _point_runs(ops: list[NodeRun], point: str) -> list[NodeRun]:
    exact = [r for r in ops if r.name == point]
    return exact or [r for r in ops if r.name.endswith("/" + point)]


def iterations(runs: list[NodeRun], first_step: int, span: int, host_call: int = 0,
               fp_point: str = "", bp_point: str = "") -> tuple[list[Iteration], list[str]]:
    """(iterations, names of points that fell back to the default) for one host call."""
    ops = [r for r in runs if not r.name.startswith("_")]
    if not ops:
        return [], []
    occurrences = defaultdict(list)
    for r in ops:  # runs are sorted by start, so each list is in iteration order
        occurrences[r.name].append(r)
    if span > 1 and any(len(v) == span for v in occurrences.values()):
        groups = [[v[i] for v in occurrences.values() if len(v) == span] for i in range(span)]
    else:
        groups = [ops]  # one iteration, or a loop we cannot see: the host call as one iteration
    missing = []
    points = {}
    for kind, point in (("fp_point", fp_point), ("bp_point", bp_point)):
        if point:
            found = _point_runs(ops, point)
            if len(found) == len(groups):
                points[kind] = found
            else:
                missing.append(point)
    step_start, step_end = ops[0].start_ns, max(r.end_ns for r in runs)
    result, start = [], step_start
    for i, group in enumerate(groups):
        end = step_end if i == len(groups) - 1 else max(r.end_ns for r in group)
        fp = points["fp_point"][i].start_ns if "fp_point" in points else min(r.start_ns for r in group)
        bp = points["bp_point"][i].end_ns if "bp_point" in points else max(r.end_ns for r in group)
        result.append(Iteration(host_call, first_step + i, start, fp, bp, end))
        start = end
    return result, missing
