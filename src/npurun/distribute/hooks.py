"""Session hooks of distributed training: bounded start-up, and variable broadcast from the root rank.

`NPUBroadcastGlobalVariablesHook(root_rank=0, index=None)` (the adapter's): after the session is
created (and variables initialised or restored), every rank's global variables get the root rank's
values, so ranks that initialised differently start equal. `StartupHook` bounds the start-up.

Rules:
- Both wait for the peers (`cluster.wait_for_peers`) and pass a start-up barrier before their
  first collective, once per session: a rank that never starts is a `StartupTimeoutError` within
  the start-up timeout, not a hang.
- The broadcast is fused: one broadcast per dtype over the concatenated, flattened variables
  (HCCL's default broadcast fusion, fusion=2 with one fusion_id), then each variable is assigned
  its slice. Variables of dtypes collectives cannot carry (bool, string, resource) are skipped.
- Several broadcast hooks in one graph (the Estimator's automatic one and a user's) build the ops
  once and broadcast once per session.
- With one rank (and no parameter servers) the hooks do nothing.
- A broadcast that loses a peer is a `CollectiveTimeoutError` naming this rank, the rank size and
  the hccl_timeout the broadcast was built with (`errors.explained`), from the TensorFlow error.
"""
from __future__ import annotations

import weakref

import tensorflow as tf

from . import cluster, ranks, settings, shared_dir, watchdog
from .collectives import broadcast
from .errors import explained

_v1 = tf.compat.v1
# The broadcast op built for root rank R is in collection "npurun_broadcast_global_variables_R": an
# op (unlike a Python tuple) serialises into a MetaGraphDef, so no export warns about it.
_BROADCAST_COLLECTION = "npurun_broadcast_global_variables_{}"
_BROADCASTABLE = (tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64)

# Sessions that passed the start-up checks: checked once per session whatever the hooks.
_started = weakref.WeakSet()
_broadcast_done = weakref.WeakSet()


def broadcast_global_variables(root_rank=0, index=None, variables=None):
    """An op that sets every global variable (or `variables`) to the root rank's value.

    `index` is accepted for the adapter's signature (it passed the rank id) and not used.
    """
    variables = list(_v1.global_variables() if variables is None else variables)
    if ranks.get_rank_size() == 1:
        return tf.no_op(name="broadcast_global_variables")
    by_dtype: dict = {}
    for var in variables:
        if var.dtype.base_dtype in _BROADCASTABLE and var.shape.is_fully_defined():
            by_dtype.setdefault(var.dtype.base_dtype, []).append(var)
    assigns = []
    with tf.name_scope("broadcast_global_variables"):
        for dtype, group in by_dtype.items():
            flat = tf.concat([tf.reshape(v.read_value() if hasattr(v, "read_value") else v, [-1]) for v in group], 0)
            # Runs once per session: TensorFlow's own op timeout (two threads for its duration, see
            # collectives.py) is affordable here, and bounds the broadcast whatever the session's config.
            received = broadcast(flat, root_rank, timeout=settings.collective_timeout())
            sizes = [v.shape.num_elements() for v in group]
            for var, part in zip(group, tf.split(received, sizes, num=len(group))):
                assigns.append(_v1.assign(var, tf.reshape(part, var.shape)))
    return tf.group(*assigns, name="broadcast_global_variables")


def _ensure_started(session, barrier) -> None:
    """Wait for the peers and pass `barrier` (an op in the session's graph), once per session."""
    if session in _started:
        return
    layout = cluster.read_layout()
    cluster.wait_for_peers(layout)
    if barrier is not None:
        # The barrier carries the chief's model_dir announcement (shared_dir.py): each rank given the
        # chief's model_dir path checks that it sees the chief's start-up marker there; then a second
        # all-reduce tells every rank which ranks failed that check, so all of them stop, each saying why.
        barrier, verdict, failed = barrier
        summed = {}
        cluster.run_barrier(session, barrier, layout, on_value=lambda value: summed.update(value=value))
        own = None
        try:
            shared_dir.verify(summed.get("value"), layout, settings.startup_timeout())
        except shared_dir.SharedModelDirError as error:
            own = error
        flags = [0] * layout.rank_size
        if own is not None:
            flags[layout.rank_id] = 1
        outcome = {}
        cluster.run_barrier(session, verdict, layout, timeout=2 * settings.startup_timeout() + 5,
                            on_value=lambda value: outcome.update(value=value), feed_dict={failed: flags})
        if own is not None:
            raise own
        shared_dir.refuse_failed(outcome.get("value"), layout)
    _started.add(session)


def _barrier_op():
    # One barrier per graph, shared by every hook (so all ranks create it exactly once): the start-up
    # barrier with the model_dir announcement, and the verdict of the model_dir check (a placeholder of one
    # flag per rank, summed).
    graph = _v1.get_default_graph()
    existing = graph.get_collection("npurun_startup_barrier")
    if existing:
        return tuple(existing[:3])
    op = cluster.barrier_op(payload=shared_dir.payload())
    failed = _v1.placeholder_with_default(tf.zeros([ranks.get_rank_size()], tf.int32), [ranks.get_rank_size()],
                                          name="npurun_model_dir_check_failed")
    verdict = cluster.barrier_op(2 * settings.startup_timeout() + 5, payload=failed)
    for item in (op, verdict, failed):
        graph.add_to_collection("npurun_startup_barrier", item)
    return op, verdict, failed


class StartupHook(_v1.train.SessionRunHook):
    """Bounded start-up for any session of a distributed run (see the module rules)."""

    def begin(self):
        self._barrier = _barrier_op() if ranks.get_rank_size() > 1 else None

    def after_create_session(self, session, coord):
        if cluster.is_distributed():
            _ensure_started(session, self._barrier)
            layout = cluster.read_layout()
            watchdog.arm(layout.peers(), cluster.who(layout))  # a silent peer: see watchdog.py

    def end(self, session):
        watchdog.disarm()


class NPUBroadcastGlobalVariablesHook(_v1.train.SessionRunHook):
    """Broadcast all global variables from `root_rank` to every rank when the session starts."""

    def __init__(self, root_rank=0, index=None):
        if root_rank is None:
            root_rank = 0
        if not isinstance(root_rank, int) or root_rank < 0:
            raise ValueError(f"NPUBroadcastGlobalVariablesHook: root_rank must be an int >= 0; got {root_rank!r}")
        self._root_rank = root_rank
        self._index = index
        self._op = None
        self._barrier = None
        self._settings = None

    def begin(self):
        if ranks.get_rank_size() == 1:
            self._op = None
            return
        size = ranks.get_rank_size()
        if self._root_rank >= size:
            raise ValueError(f"NPUBroadcastGlobalVariablesHook: root_rank={self._root_rank} but there are only "
                             f"{size} ranks")
        self._settings = settings.current()  # the hccl_timeout the broadcast is built with
        graph = _v1.get_default_graph()
        existing = graph.get_collection(_BROADCAST_COLLECTION.format(self._root_rank))
        self._barrier = _barrier_op()
        if existing:
            self._op = existing[0]
        else:
            self._op = broadcast_global_variables(self._root_rank, self._index)
            graph.add_to_collection(_BROADCAST_COLLECTION.format(self._root_rank), self._op)

    def after_create_session(self, session, coord):
        if self._op is None:
            return
        _ensure_started(session, self._barrier)
        if session in _broadcast_done:
            return
        with explained(self._settings), watchdog.busy():
            session.run(self._op)
        _broadcast_done.add(session)
