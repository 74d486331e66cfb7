"""OverflowHook: which ops produced inf/NaN, in execution order (`DumpConfig(enable_dump_debug=True)`).

Mechanism: at a checked step, `before_run` adds every floating-point output of the ops the run
executes to its fetches and asks for FULL_TRACE step statistics; `after_run` keeps the outputs
holding inf or NaN and puts them in execution order, so the first record is the op where the
overflow appeared. Rules:
- Execution order: an op comes after every overflowing op it depends on in the graph; among ops
  free to go next, the one that started first in that same run (step statistics) goes first,
  then the earlier-created one. Dependencies come first because Grappler may fold constant
  subgraphs into constants, whose runtime start times say nothing about the data flow.
- Steps: `dump_step` selects the checked steps too (None: every step), as in `steps.StepTracker`.
- Ops: all ops of the run (`dump_layer` does not limit detection), fetchable outputs of dtype
  float16/bfloat16/float32/float64/complex (see `graph_scan`).
- `dump_debug_mode` ("aicore_overflow", "atomic_overflow", "all"): the NPU distinguishes overflow
  in its AI Core and atomic-add units; a CPU/GPU has neither, so all three detect inf/NaN in op
  outputs.
- Output: records of kind "overflow" with `order` (0 = first) and `first`, in the session's dump
  directory (`<dump_path>/<mode>-<timestamp>`), tensors as .npy unless `dump_data="stats"`;
  a warning names the first op of each step with an overflow. `overflows` keeps the records.
"""
from __future__ import annotations

import logging

import tensorflow as tf

from .dump_files import DumpWriter
from .graph_scan import is_fetchable
from .stats import has_overflow
from .step_stats import first_start, node_runs, trace_options
from .step_hook import SelectedStepHook

log = logging.getLogger(__name__)



def _is_float(tensor) -> bool:
    dtype = tensor.dtype.base_dtype
    return dtype.is_floating or dtype.is_complex


def execution_order(items: list, ops: list, starts: dict) -> list:
    """`items` ((position, slot, tensor, op) of overflowing outputs) in execution order (rules above).

    `ops` is the run's fan-in in topological order; `starts` maps node names to start times."""
    bad_ops = {item[3].name for item in items}
    # Overflowing ancestors of each op, propagated along the topological order.
    ancestors: dict[str, frozenset] = {}
    for op in ops:
        found = set()
        for parent in [t.op for t in op.inputs] + list(op.control_inputs):
            found |= ancestors.get(parent.name, frozenset())
            if parent.name in bad_ops:
                found.add(parent.name)
        ancestors[op.name] = frozenset(found)
    never = float("inf")  # an op missing from the trace sorts by position only
    remaining = sorted(items, key=lambda item: (starts.get(item[3].name, never), item[0], item[1]))
    ordered, placed = [], set()
    while remaining:
        # The earliest-started item all of whose overflowing ancestors are already placed.
        index = next(i for i, item in enumerate(remaining) if ancestors[item[3].name] <= placed)
        item = remaining.pop(index)
        ordered.append(item)
        placed.add(item[3].name)
    return ordered


class OverflowHook(SelectedStepHook):
    def __init__(self, dump_config, mode: str, steps_per_run: int = 1, writer: DumpWriter | None = None):
        super().__init__(dump_config, mode, steps_per_run, writer)
        self.overflows: list[dict] = []

    def before_run(self, run_context):
        ops = self._ops_if_selected(run_context)
        if ops is None:
            return None
        graph = self._scanner.graph
        chosen = [(position, slot, t, op) for position, op in enumerate(ops)
                  for slot, t in enumerate(op.outputs) if _is_float(t) and is_fetchable(graph, t)]
        if not chosen:
            return None
        self._pending = chosen
        return tf.compat.v1.train.SessionRunArgs({t.name: t for _, _, t, _ in chosen},
                                                 options=trace_options())

    def after_run(self, run_context, run_values):
        step = self._tracker.step
        span = self._tracker.advance(run_context.session)
        if self._pending is None:
            return
        values, pending = run_values.results, self._pending
        self._pending = None
        bad = [item for item in pending if has_overflow(values[item[2].name])]
        if not bad:
            return
        starts = first_start(node_runs(run_values.run_metadata.step_stats))
        bad = execution_order(bad, self._scanner.ops(run_context.original_args), starts)
        extra = {"last_step": step + span - 1} if span > 1 else {}
        for order, (_, slot, tensor, op) in enumerate(bad):
            record = self._writer.write(kind="overflow", step=step, op=op.name, op_type=op.type, io="output",
                                        slot=slot, tensor=tensor.name, value=values[tensor.name],
                                        data=self._data, order=order, first=order == 0, **extra)
            self.overflows.append(record)
        first = bad[0]
        log.warning("overflow at step %d: %d op output(s) hold inf/NaN; the first is %s (%s) output %d; "
                    "records in %s", step, len(bad), first[3].name, first[3].type, first[1], self._writer.path)

    def end(self, session):
        self._writer.close()
