"""TensorDumpHook: the tensors of selected ops at selected steps (`DumpConfig(enable_dump=True)`).

Mechanism: at a selected step, `before_run` adds the selected tensors to the run's fetches, so
their values come from the very run that trains (no second run, no graph change); at other steps
it adds nothing. Rules:
- Steps: `dump_step` (None: every step), numbered as in `steps.StepTracker`. With
  `iterations_per_loop` N > 1 a host call covers N steps; it is dumped when any of them is
  selected, records carry `step` (the first) and `last_step`.
- Ops: those the run executes anyway (`graph_scan.fan_in` of its fetches), in topological order,
  restricted to `dump_layer` (space-separated exact op names; None: all). Names in `dump_layer`
  that the run does not execute are reported once with a warning.
- Tensors: `dump_mode` "output" (each output slot), "input" (each input slot; the value is the
  producer's output, or the fed value) or "all" (inputs then outputs). Only fetchable tensors
  (`graph_scan.is_fetchable`): ops inside a device loop or a v1 cond branch cannot be fetched and
  are skipped (the loop's results outside it are dumped).
- Data: `dump_data="tensor"` writes .npy files plus statistics, `"stats"` statistics only
  (format: `dump_files`). One dump directory per session: `<dump_path>/<mode>-<timestamp>`.
- Fetching a tensor keeps Grappler from fusing its op away during that run, so a dumped op runs
  unfused at dump steps; values are the same up to floating-point rounding.
- Under a grappler precision rewrite (the low-precision precision modes) fetching would also keep
  an op in float32, so the values come from debug watches on the executed graph instead
  (`executed_dump`): the float16 / bfloat16 outputs and the inserted casts, with their dtypes.
"""
from __future__ import annotations

import logging

import tensorflow as tf

from .dump_files import DumpWriter
from .executed_dump import ExecutedCapture
from .graph_scan import is_fetchable
from .step_hook import SelectedStepHook

log = logging.getLogger(__name__)


def selected_tensors(graph, ops, layer, dump_mode: str) -> list[tuple[str, int, object, object]]:
    """(io, slot, tensor, op) for each tensor to dump, in op order, inputs before outputs."""
    chosen = []
    for op in ops:
        if layer is not None and op.name not in layer:
            continue
        if dump_mode in ("input", "all"):
            chosen += [("input", i, t, op) for i, t in enumerate(op.inputs) if is_fetchable(graph, t)]
        if dump_mode in ("output", "all"):
            chosen += [("output", i, t, op) for i, t in enumerate(op.outputs) if is_fetchable(graph, t)]
    return chosen


class TensorDumpHook(SelectedStepHook):
    def __init__(self, dump_config, mode: str, steps_per_run: int = 1, writer: DumpWriter | None = None,
                 executed_graph=False):
        """`executed_graph`: dump the executed graph's tensors (see the rules above); a bool or a
        callable asked at `begin` (the session's ConfigProto is complete by then)."""
        super().__init__(dump_config, mode, steps_per_run, writer)
        self._executed_graph = executed_graph
        layer = dump_config.dump_layer
        self._layer = frozenset(layer.split()) if layer else None
        self._mode = dump_config.dump_mode
        self._warned_missing = False

    def before_run(self, run_context):
        ops = self._ops_if_selected(run_context)
        if ops is None:
            return None
        self._warn_missing(ops)
        if self._executed:
            self._pending = ExecutedCapture(ops, self._layer, self._mode, self._scanner.graph)
            return tf.compat.v1.train.SessionRunArgs(None, options=self._pending.run_options())
        chosen = selected_tensors(self._scanner.graph, ops, self._layer, self._mode)
        if not chosen:
            return None
        self._pending = chosen
        # Keyed by tensor name: a tensor that is both an output and another op's input is fetched once.
        return tf.compat.v1.train.SessionRunArgs({t.name: t for _, _, t, _ in chosen})

    def after_run(self, run_context, run_values):
        step = self._tracker.step
        span = self._tracker.advance(run_context.session)
        if self._pending is None:
            return
        extra = {"last_step": step + span - 1} if span > 1 else {}
        if isinstance(self._pending, ExecutedCapture):
            try:
                for record in self._pending.records(run_values.run_metadata):
                    self._writer.write(kind="tensor", step=step, data=self._data, **record, **extra)
            finally:
                self._pending.close()
                self._pending = None
            return
        values = run_values.results
        for io, slot, tensor, op in self._pending:
            self._writer.write(kind="tensor", step=step, op=op.name, op_type=op.type, io=io, slot=slot,
                               tensor=tensor.name, value=values[tensor.name], data=self._data, **extra)
        self._pending = None

    def begin(self):
        super().begin()
        executed = self._executed_graph
        self._executed = bool(executed() if callable(executed) else executed)

    def end(self, session):
        self._writer.close()

    def _warn_missing(self, ops) -> None:
        if self._layer is None or self._warned_missing:
            return
        self._warned_missing = True
        missing = sorted(self._layer - {op.name for op in ops})
        if missing:
            log.warning("DumpConfig dump_layer: %s not executed by this run (not in the graph, inside a "
                        "device loop or not needed for the fetches); nothing is dumped for them",
                        ", ".join(missing))
