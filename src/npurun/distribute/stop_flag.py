"""Ranks agree on when to stop after a SIGTERM / SIGINT, so that every rank stops after the same run.

Why: a scheduler signals the ranks at slightly different moments (or only one of them). If each
rank stopped on its own signal, one could stop a run earlier than another, and the other's run
in flight would wait in its collectives for a peer that is gone (up to hccl_timeout) and could not
end in a consistent state to checkpoint. TensorFlow's PreemptionCheckpointHandler solves the same
problem by letting the workers agree on the step to stop at; here the agreement rides along with
the training runs themselves.

Mechanism (`for_collectives`, data-parallel runs): each rank has a local int32 variable
`npurun_stop_flag/flag`, 0 until this rank receives a signal, then the signal's number. Every
training run (one step, or a whole device loop of iterations_per_loop steps) also reduces that
flag over the world's ranks. Every rank gets the same result from the same run, so all ranks see
"someone was signalled" after the same run, and all stop there: the chief saves, everybody exits
with 128 + the signal (SIGTERM wins over SIGINT). A rank raises its flag between runs, so it always
runs one more run after its signal. Two ways to reduce it:
  - riding (the usual case, one step per run): NPUDistributedOptimizer's gradient all-reduce
    carries two more elements, "this rank got SIGTERM" and "this rank got a signal" (`rider`,
    `record_ride`), summed with the gradients: no collective of its own. Used when exactly one
    such all-reduce exists in the training graph's top level (not inside a device loop or a
    compiled function, whose values the host cannot fetch per run);
  - otherwise one all-reduce (max) of the flag per run, in parallel with the step (no control
    dependency), under its own group key. Each collective op run costs a fixed amount (and, on
    TensorFlow's gRPC runtime, two threads kept until the session closes), which is why riding is
    preferred; in a device loop this happens once per loop.

Parameter-server mode (`for_parameter_servers`): workers do not run in lock step, so there is no
common run to agree on. The flag is one shared variable on the first ps task: a signalled worker
raises it, every worker reads it with each run (one scalar, fetched in parallel with the step) and
stops after the run in which it saw it. So a signal to any worker stops every worker; the chief
saves the shared variables at the step it reached (asynchronous training: another worker's
last update may land just before or after the save).

The flag is a local variable (reset to 0 whenever a session starts) and is never checkpointed.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Optional

import tensorflow as tf
from tensorflow.python.ops import collective_ops

from . import collectives, ranks

_v1 = tf.compat.v1
STOP_GROUP_KEY = collectives.BARRIER_GROUP_KEY - 1  # the world's ranks, under a key user groups never get
FLAG_COLLECTION = "npurun_stop_flag"  # the flag variable of a training graph
RIDE_COLLECTION = "npurun_stop_flag_rides"  # the agreed values decoded from gradient all-reduces
SIGTERM, SIGINT = 15, 2
_building = threading.local()


@contextlib.contextmanager
def training_graph():
    """Around building an NPUEstimator training graph (model_fn included): gradient all-reduces
    built inside carry the stop flag (`rider`). Elsewhere (sess.run scripts) they do not, so no
    variable appears in graphs that npurun does not initialise."""
    previous = getattr(_building, "on", False)
    _building.on = True
    try:
        yield
    finally:
        _building.on = previous


def flag_variable(graph=None):
    """This graph's stop flag (a local int32 variable, 0 until this rank is signalled), created on first use."""
    graph = graph or _v1.get_default_graph()
    existing = graph.get_collection(FLAG_COLLECTION)
    if existing:
        return existing[0]
    with graph.as_default(), tf.name_scope("npurun_stop_flag/"):
        flag = _v1.Variable(0, dtype=tf.int32, trainable=False, name="flag",
                            collections=[_v1.GraphKeys.LOCAL_VARIABLES, FLAG_COLLECTION])
    return flag


def rider(dtype):
    """For a gradient all-reduce being built: two elements of `dtype` to append (this rank got
    SIGTERM; this rank got a signal), or None: no NPUEstimator training graph is being built, or
    the all-reduce is inside a loop or function body (its values cannot be fetched per run)."""
    if not getattr(_building, "on", False) or ranks.get_rank_size() == 1:
        return None
    graph = _v1.get_default_graph()
    if graph.building_function or graph._get_control_flow_context() is not None:
        return None
    value = flag_variable(graph).read_value()
    return tf.cast(tf.stack([tf.equal(value, SIGTERM), tf.not_equal(value, 0)]), dtype)


def record_ride(summed) -> None:
    """`summed`: the two rider elements after the all-reduce (counts over the ranks)."""
    agreed = tf.where(summed[0] > 0.5, SIGTERM, tf.where(summed[1] > 0.5, SIGINT, 0))
    _v1.add_to_collection(RIDE_COLLECTION, tf.identity(agreed, name="npurun_stop_flag_agreed"))


class StopFlag:
    """The graph side of the agreement: `agreed` (fetched with every run: 0, or the signal number
    some rank received) and `raise_(session, signum)` (run once, between runs, by a signalled rank)."""

    def __init__(self, agreed, raise_op, signum_feed, kind: str, start_op):
        self.agreed = agreed
        self.start_op = start_op  # run once the session's variables are initialised or restored
        self._raise_op = raise_op
        self._signum = signum_feed
        self.kind = kind  # how the flag is reduced: riding / own all-reduce (same run everywhere), parameter server

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
    graph = _v1.get_default_graph()
    flag = flag_variable(graph)
    rides = graph.get_collection(RIDE_COLLECTION)
    with tf.name_scope("npurun_stop_flag"):
        raise_op, signum = _raise_op(flag)
        if len(rides) == 1 and _fetchable(rides[0], graph):
            return StopFlag(rides[0], raise_op, signum, "riding on the gradient all-reduce", flag.initializer)
        # Its own group key, so its instance keys match across ranks whatever groups model_fn built.
        agreed = collective_ops.all_reduce_v2(
            flag.read_value(), size, STOP_GROUP_KEY, collectives.next_instance_key(STOP_GROUP_KEY),
            merge_op="Max", final_op="Id", communication_hint=collectives._hint(),
            timeout=collectives._timeout(timeout))  # 0: hccl_timeout is the run deadline (collectives.py)
    return StopFlag(agreed, raise_op, signum, "own all-reduce", flag.initializer)


def _fetchable(tensor, graph) -> bool:
    """Whether the host can fetch `tensor` once per run: in the graph itself, not in a while loop,
    cond or function body (a device loop, a compiled step)."""
    return tensor.graph is graph and tensor.op._get_control_flow_context() is None


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
