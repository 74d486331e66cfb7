"""The part the dump and overflow hooks share: acting only at the selected steps, scanning the ops
a run executes, and writing into one dump directory per session."""
from __future__ import annotations

import tensorflow as tf

from .dump_files import DumpWriter
from .graph_scan import RunScanner
from .steps import StepTracker


class SelectedStepHook(tf.compat.v1.train.SessionRunHook):
    """Base of hooks that act at the `dump_step` steps (see `steps.StepTracker` for numbering)."""

    def __init__(self, dump_config, mode: str, steps_per_run: int = 1, writer: DumpWriter | None = None):
        self._steps = dump_config.steps
        self._data = dump_config.dump_data
        self._tracker = StepTracker(mode, steps_per_run)
        self._writer = writer or DumpWriter(dump_config.dump_path, mode)
        self._pending = None

    @property
    def path(self) -> str | None:
        """This session's dump directory (None until something was written)."""
        return self._writer.path

    def begin(self):
        self._tracker.begin()
        self._scanner = RunScanner(tf.compat.v1.get_default_graph())

    def after_create_session(self, session, coord):
        self._tracker.sync(session)

    def _ops_if_selected(self, run_context):
        """The ops this run executes, in topological order, when its step is selected; else None."""
        self._pending = None
        if not self._tracker.selected(self._steps):
            return None
        return self._scanner.ops(run_context.original_args)
