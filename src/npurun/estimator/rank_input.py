"""Each rank's own input position at a preemption of a data-parallel run.

Why: only the chief writes checkpoints, so they hold the chief's input position, and every rank
restores it. A rank whose input pipeline state differs from the chief's (`dataset.shard(n, rank)`,
rank-dependent maps or buffers) would resume from the chief's position, not its own.

Rule: when the ranks stop together after a signal (distribute/stop_flag.py), every rank other than
the chief also writes its own input position, at the same step, to
`<model_dir>/input-rank<R>/model.ckpt-<step>` (the iterator only). A later train() that restores
the chief's checkpoint of that step with its input position (not one marked finished) restores this
rank's own position over the chief's. Periodic checkpoints (a crash rather than a signal) still give
every rank the chief's position. Inputs whose position cannot be saved are skipped (the chief's
checkpoints say so already).
"""
from __future__ import annotations

import logging
import os
from typing import Optional

import tensorflow as tf

from .. import logs, safe_files
from . import checkpoints

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1


class RankInput:
    """Saves and restores one rank's input position (build it before the graph is finalised)."""

    def __init__(self, iterator, probe, model_dir: str, rank: int):
        self.directory = os.path.join(model_dir, f"input-rank{rank}")
        self._probe = probe
        self._saver = _v1.train.Saver(var_list={iterator._iterator_resource.name: iterator}, sharded=False,
                                      max_to_keep=None, allow_empty=True, save_relative_paths=True)

    def path(self, step: int) -> str:
        return os.path.join(self.directory, f"model.ckpt-{step}")

    def restore(self, session, restored: Optional[str], finished: Optional[int]) -> Optional[str]:
        """Over the chief's position restored from `restored`: this rank's own of the same step, if
        written (and the checkpoint is not the end of a finished train()); returns its path."""
        step = checkpoints.checkpoint_step(restored) if restored else None
        if step is None or step == finished or not tf.io.gfile.exists(self.path(step) + ".index"):
            return None
        self._saver.restore(session, self.path(step))
        return self.path(step)

    def save(self, session, step: int) -> Optional[str]:
        """This rank's position at `step`; None when it cannot be serialised."""
        try:
            with logs.native_lines_of_handled_error():  # not saveable: the chief's warning said so
                session.run(self._probe.op)  # the op: its variant result has no numpy form
        except tf.errors.OpError:
            return None
        safe_files.make_dir(self.directory, "rank input-position folder")  # never a link: Saver writes there
        return self._saver.save(session, self.path(step), write_meta_graph=False, write_state=False)


def build(inp, probe, model_dir: str, chief: bool, stop_flag) -> Optional[RankInput]:
    """A RankInput for a non-chief rank of a data-parallel run whose input has an iterator, else None."""
    if chief or stop_flag is None or stop_flag.kind == "parameter server" or probe is None:
        return None
    from ..distribute import ranks

    return RankInput(inp.iterator, probe, model_dir, ranks.get_rank_id())
