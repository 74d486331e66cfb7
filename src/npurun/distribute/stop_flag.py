"""Ranks agree on when to stop after a SIGTERM / SIGINT, so that every rank stops after the same run.

Why: a scheduler signals the ranks at slightly different moments (or only one of them). If each
rank stopped on its own signal, one could stop a run earlier than another, and the other's run
in flight would wait in its collectives for a peer that is gone (up to hccl_timeout) and could not
end in a consistent state to checkpoint. TensorFlow's PreemptionCheckpointHandler solves the same
problem by letting the workers agree on the step to stop at; here the agreement rides along with
the training runs themselves.

Mechanism (`for_collectives`, data-parallel runs): each rank has a local int32 variable
`npurun_stop_flag`, 0 until this rank receives a signal, then the signal's number. Every training
run (one step, or a whole device loop of iterations_per_loop steps) also all-reduces that flag
with `max` over the world's ranks, in parallel with the step (no control dependency: it adds one
tiny collective, not a round trip after the step). Every rank gets the same result from the same
run, so all ranks see "someone was signalled" after the same run, and all stop there: the chief
saves, everybody exits with 128 + the signal (SIGTERM wins over SIGINT, being the larger number).
A rank raises its flag between runs, so it always runs one more run after its signal.

Parameter-server mode (`for_parameter_servers`): workers do not run in lock step, so there is no
common run to agree on. The flag is one shared variable on the first ps task: a signalled worker
raises it, every worker reads it with each run (one scalar, fetched in parallel with the step) and
stops after the run in which it saw it. So a signal to any worker stops every worker; the chief
saves the shared variables at the step it reached (asynchronous training: another worker's
last update may land just before or after the save).

The flag is a local variable (reset to 0 whenever a session starts) and is never checkpointed.
"""
from __future__ import annotations

from typing import Optional

import tensorflow as tf
from tensorflow.python.ops import collective_ops

from . import collectives, ranks, settings

_v1 = tf.compat.v1
STOP_GROUP_KEY = collectives.BARRIER_GROUP_KEY - 1  # the world's ranks, under a key user groups never get


class StopFlag:
    """The graph side of the agreement: `agreed` (fetched with every run: 0, or the signal number
    some rank received) and `raise_(session, signum)` (run once, between runs, by a signalled rank)."""

    def __init__(self, agreed, raise_op, signum_feed, kind: str, start_op):
        self.agreed = agreed
        self.start_op = start_op  # run once the session's variables are initialised or restored
        self._raise_op = raise_op
        self._signum = signum_feed
        self.kind = kind  # "collective" (same run on every rank) or "parameter server" (each worker's next run)

    def raise_(self, session, signum: int) -> None:
        session.run(self._raise_op, feed_dict={self._signum: int(signum)})


def _raise_op(flag):
    signum = _v1.placeholder(tf.int32, [], name="npurun_stop_signum")
    return _v1.assign(flag, tf.maximum(flag, signum)).op, signum


def for_collectives(timeout: Optional[float] = None) -> Optional[StopFlag]:
    """In the default graph: the data-parallel agreement (None with one rank: nothing to agree)."""
    size = ranks.get_rank_size()
    if size == 1:
        return None
    with tf.name_scope("npurun_stop_flag"):
        flag = _v1.Variable(0, dtype=tf.int32, trainable=False, name="flag",
                            collections=[_v1.GraphKeys.LOCAL_VARIABLES])
        raise_op, signum = _raise_op(flag)
        # Its own group key, so its instance keys match across ranks whatever groups model_fn built.
        agreed = collective_ops.all_reduce_v2(
            flag.read_value(), size, STOP_GROUP_KEY, collectives.next_instance_key(STOP_GROUP_KEY),
            merge_op="Max", final_op="Id", communication_hint=collectives._hint(),
            timeout=float(timeout if timeout is not None else settings.collective_timeout()))
    return StopFlag(agreed, raise_op, signum, "collective", flag.initializer)


def for_parameter_servers(is_chief: bool) -> StopFlag:
    """In the default graph: the parameter-server agreement (a shared flag on /job:ps/task:0).

    The chief resets the flag when its session starts (a new job on ps tasks that survived an
    earlier preempted one); the other workers only initialise it if nobody did yet.
    """
    with tf.name_scope("npurun_stop_flag"), tf.device("/job:ps/task:0"):
        flag = _v1.Variable(0, dtype=tf.int32, trainable=False, name="shared_flag", collections=[])
        raise_op, signum = _raise_op(flag)
        if is_chief:
            start = flag.initializer
        else:
            start = tf.cond(_v1.is_variable_initialized(flag), tf.no_op, lambda: flag.initializer)
        agreed = flag.read_value()
    return StopFlag(agreed, raise_op, signum, "parameter server", start)
