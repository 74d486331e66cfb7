"""Which step a session run is, for hooks that act at selected steps.

Rules:
- train: the step of a run is the global step *before* the run (the first training step is 0,
  as in `dump_step="0"`). After each run the hook re-reads the global step (one tiny extra
  `Session.run` of a variable read, only in hooks that are enabled), so `iterations_per_loop`
  N > 1 is handled exactly: the run covered steps [before, after) and `last_span` is N.
- eval / infer (or train without a global step): the step is the index of the run within the
  session, starting at 0; a run covers one step.
- A planned run covers `steps_per_run` steps (`iterations_per_loop` in train, else 1): a run is
  selected when any step it covers is selected.
"""
from __future__ import annotations

import tensorflow as tf

from ..config import parsers


class StepTracker:
    def __init__(self, mode: str, steps_per_run: int = 1):
        self.mode = mode
        self.steps_per_run = steps_per_run if mode == "train" else 1
        self.step = 0          # step of the next run
        self.last_span = 1     # steps covered by the last run
        self._global_step = None

    def begin(self) -> None:
        """Find the global step (call from `SessionRunHook.begin`, inside the graph)."""
        self._global_step = tf.compat.v1.train.get_global_step() if self.mode == "train" else None

    def sync(self, session) -> None:
        """Read the starting step (call from `after_create_session`)."""
        self.step = int(session.run(self._global_step)) if self._global_step is not None else 0

    def covered(self) -> range:
        """The steps the next run is planned to cover."""
        return range(self.step, self.step + self.steps_per_run)

    def selected(self, steps) -> bool:
        """True when the next run covers a step of `steps` (parsed dump_step; None: every step)."""
        if steps is None:
            return True
        return any(parsers.dump_step_contains(steps, n) for n in self.covered())

    def advance(self, session) -> int:
        """After a run: move to the next run's step; return the steps the run covered."""
        if self._global_step is not None:
            after = int(session.run(self._global_step))
            self.last_span = max(after - self.step, 1)
            self.step = after
        else:
            self.last_span = 1
            self.step += 1
        return self.last_span
