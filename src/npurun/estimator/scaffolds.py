"""What a model_fn's `tf.compat.v1.train.Scaffold` decides, honoured as MonitoredSession did.

  - `saver`: a tf.compat.v1 Saver, or a `tf.train.Checkpoint` (then checkpoints are written
    object-based, readable by `tf.train.Checkpoint.restore`);
  - without a checkpoint to restore: `init_op` (default: initialise every variable) with
    `init_feed_dict`, then `init_fn(scaffold, session)` (how scripts load pretrained weights);
  - always: `local_init_op` (default: local variables and tables);
  - then `ready_op` (a list of what is not ready, empty when ready) must be empty.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1


def saver_of(scaffold):
    """The scaffold's saver as a tf.compat.v1 Saver, or None when it has none."""
    saver = getattr(scaffold, "saver", None) if scaffold is not None else None
    if saver is None or isinstance(saver, _v1.train.Saver):
        return saver
    if isinstance(saver, tf.train.Checkpoint):
        from tensorflow.python.checkpoint import graph_view, save_util_v1

        saveables, _ = save_util_v1.frozen_saveables_and_savers(graph_view.ObjectGraphView(saver))
        return _v1.train.Saver(var_list=saveables, sharded=True, max_to_keep=None, allow_empty=True)
    return saver  # anything with Saver's save/restore


def has_init_steps(scaffold) -> bool:
    return scaffold is not None and any(getattr(scaffold, name, None) is not None
                                        for name in ("init_op", "init_fn", "local_init_op", "ready_op"))


def initialize(sess, scaffold, restored: bool, full_init, local_init) -> None:
    """Initialise a session the scaffold's way (after a restore when `restored`)."""
    if not restored:
        sess.run(scaffold.init_op if scaffold.init_op is not None else full_init, feed_dict=scaffold.init_feed_dict)
        if scaffold.init_fn is not None:
            scaffold.init_fn(sess)
    if scaffold.local_init_op is not None:
        sess.run(scaffold.local_init_op)
    elif restored or scaffold.init_op is not None:
        sess.run(local_init)
    if scaffold.ready_op is not None:
        not_ready = np.asarray(sess.run(scaffold.ready_op))
        if not_ready.size:
            names = [v.decode() if isinstance(v, bytes) else str(v) for v in not_ready.ravel()]
            raise RuntimeError(f"Init operations did not make model ready: the Scaffold's ready_op reports "
                               f"{names} not ready (initialise them in init_op, init_fn or local_init_op)")
