"""Parameter-server training (`NPURunConfig(distribute=ParameterServerStrategy)` with a TF_CONFIG cluster).

Mechanism: the same runtime TensorFlow 1's ParameterServerStrategy and tf.estimator used:
every task runs a `tf.distribute.Server`; variables live on the `ps` tasks (placed round-robin by
`tf.compat.v1.train.replica_device_setter`), the rest of the step on the worker; each worker
applies its own gradients to the shared variables (asynchronous between-graph replication, no
gradient averaging). The strategy object marks the mode; the cluster is TF_CONFIG's (the
strategy reads the same variable).

Rules:
- A `ps` task serves its variables until the process is stopped (`run_ps_task` blocks, as
  `server.join()` does in tf.estimator); `npurun launch --ps K` stops the ps tasks when every
  rank has finished.
- Worker sessions see only their own task and the ps tasks (`device_filters`), and the start-up
  waits (bounded) for the ps tasks and the other workers.
- Only the chief (rank 0: the `chief` task, else worker 0) initialises or restores the shared
  variables. Every other worker waits for it as TensorFlow's SessionManager.wait_for_session
  does: it polls `tf.compat.v1.report_uninitialized_variables(global_variables())` until the list
  is empty (`wait_for_initialization`), then runs only its local initialisers. The wait is bounded
  by the start-up timeout (HCCL_CONNECT_TIMEOUT, default 120 s); past it,
  `InitializationTimeoutError` names the chief and the variables still uninitialised. So a worker
  that starts late never resets variables that are already being trained.
- Evaluation, prediction and export sessions on a worker run locally from the checkpoint (their
  sessions do not see the ps tasks).
- Within the Estimator the placement is applied to the finished training graph (a graph transform
  applying the replica_device_setter's choice to every op, colocated ops following their
  variable), because the Estimator's `plan.device` is a device string, not a device function.
  Ops inside a device loop's body (iterations_per_loop > 1) are placed by TensorFlow; use
  iterations_per_loop=1 in PS mode. A non-chief worker's training plan gets the readiness op
  (a graph transform) and `plan.wait_for_initialization`, which the session's creator calls in
  place of initialising or restoring the global variables.
"""
from __future__ import annotations

import logging
import time
from typing import Optional

import tensorflow as tf

from . import cluster, settings
from .errors import InitializationTimeoutError

_v1 = tf.compat.v1
logger = logging.getLogger("npurun")
PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
          "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
          "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp")


def _spec(layout):
    return tf.train.ClusterSpec({job: list(addresses) for job, addresses in layout.cluster.items()})


def device_setter(layout: Optional[cluster.Layout] = None):
    """This worker's device function: variables round-robin on the ps tasks, other ops on this worker."""
    layout = layout or cluster.read_layout()
    return _v1.train.replica_device_setter(cluster=_spec(layout), worker_device=layout.local_task, ps_ops=list(PS_OPS))


def run_ps_task(layout: Optional[cluster.Layout] = None) -> None:
    """Serve this ps task's variables until the process is stopped (never returns).

    Inside train() (SIGTERM / SIGINT watched, see npurun/preemption.py) the first signal ends
    the serving once the chief has exited (it may still be saving the shared variables, which live
    here), at most the start-up timeout (HCCL_CONNECT_TIMEOUT) later: one line, then
    SystemExit(143 / 130), as a worker's preemption does.
    """
    layout = layout or cluster.read_layout()
    server = cluster.ensure_server(None, layout)
    logger.info("npurun: %s serves the parameters at %s until stopped", layout.local_task, layout.address)
    from .. import preemption

    watch = preemption.current()
    if not watch.installed:  # no handlers here (not the main thread): serve until the process is stopped
        server.join()
        return
    # server.join() blocks in C++, where Python's signal handlers never run: wait in Python instead.
    while not watch.requested:
        time.sleep(0.1)
    chief = layout.cluster[layout.rank_tasks[0][0]][layout.rank_tasks[0][1]] if layout.rank_tasks else None
    deadline = time.monotonic() + settings.startup_timeout()
    while chief is not None and cluster._reachable(chief, timeout=0.2) and time.monotonic() < deadline:
        time.sleep(0.1)
    logger.warning("%s: %s stopped serving the parameters%s; exiting with status %d", watch.name(),
                   layout.local_task, " (the chief has exited)" if chief and time.monotonic() < deadline else "",
                   watch.exit_status)
    raise SystemExit(watch.exit_status)


def place_graph(graph, layout: Optional[cluster.Layout] = None) -> None:
    """Apply `device_setter` to every op of a finished graph, as if it had been built under it.

    Ops colocated with another op (the `_class` attribute, e.g. optimizer updates with their
    variable) take that op's device, as graph construction does.
    """
    chooser = device_setter(layout)
    ops = graph.get_operations()
    for op in ops:
        op._set_device(chooser(op))
    by_name = {op.name: op for op in ops}
    for op in ops:
        try:
            groups = op.get_attr("_class")
        except ValueError:
            continue
        for entry in groups:
            target = by_name.get(entry.decode()[len("loc:@"):])
            if target is not None and target is not op:
                op._set_device(target.device)
                break


READY_COLLECTION = "npurun_ps_uninitialized_variables"
POLL_SECONDS = 0.5  # between two readiness checks (SessionManager's recovery_wait_secs is 30 s)


def is_chief(layout: Optional[cluster.Layout] = None) -> bool:
    """Whether this worker initialises the shared variables (rank 0: the chief task, else worker 0)."""
    layout = layout or cluster.read_layout()
    return layout.rank_id == 0


def uninitialized_variables(graph=None):
    """`tf.compat.v1.report_uninitialized_variables` over the graph's global variables: a string
    tensor of the names still uninitialised (empty once the chief has initialised them).

    Built once per graph (later calls return the same tensor); the graph must not be finalised
    the first time.
    """
    graph = graph or _v1.get_default_graph()
    existing = graph.get_collection(READY_COLLECTION)
    if existing:
        return existing[0]
    if graph.finalized:
        raise RuntimeError("ps.uninitialized_variables: the graph is finalized; build the readiness op first "
                           "(call ps.uninitialized_variables(graph) before finalizing it)")
    with graph.as_default():
        report = _v1.report_uninitialized_variables(_v1.global_variables(), name="npurun_ps_ready")
    graph.add_to_collection(READY_COLLECTION, report)
    return report


def wait_for_initialization(session, timeout: Optional[float] = None, layout: Optional[cluster.Layout] = None,
                            poll_seconds: float = POLL_SECONDS) -> float:
    """Block until every global variable of `session.graph` is initialised (by the chief); the
    seconds waited.

    First waits (bounded) for the peers' servers, then runs `uninitialized_variables` every
    `poll_seconds` s. `timeout` (default: the start-up timeout, HCCL_CONNECT_TIMEOUT) bounds the
    whole wait; past it, `InitializationTimeoutError` names this worker, the chief and the
    variables still uninitialised (its `missing` holds their names).
    """
    layout = layout or cluster.read_layout()
    timeout = settings.startup_timeout() if timeout is None else timeout
    report = uninitialized_variables(session.graph)
    start = time.monotonic()
    if cluster.is_distributed(layout):
        cluster.wait_for_peers(layout, timeout)
    while True:
        try:
            missing = [name.decode() for name in session.run(report)]
        except tf.errors.FailedPreconditionError as err:  # as SessionManager: "uninitialized" is not ready
            if "uninitialized" not in str(err):
                raise
            missing = ["(a variable reported uninitialized by TensorFlow)"]
        if not missing:
            return time.monotonic() - start
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            raise InitializationTimeoutError(_not_initialized_message(layout, missing, timeout), missing=tuple(missing))
        time.sleep(max(0.0, min(poll_seconds, timeout - elapsed)))


def _not_initialized_message(layout: cluster.Layout, missing: list, timeout: float) -> str:
    who = (f"worker rank {layout.rank_id} of {layout.rank_size}" if layout.rank_id is not None
           else layout.local_task)
    if layout.rank_tasks:
        job, index = layout.rank_tasks[0]
        chief = f"the chief (rank 0, {layout.rank_device(0)} at {layout.cluster[job][index]})"
    else:
        chief = "the chief (rank 0)"
    shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    return (f"{who}: {chief} did not initialise the shared variables within the start-up timeout of "
            f"{timeout:g} s (HCCL_CONNECT_TIMEOUT): still uninitialised: {shown}. Check that the chief is "
            f"running and not failing, or raise HCCL_CONNECT_TIMEOUT if restoring its checkpoint takes longer")


def contribute(options, mode, plan, layout: cluster.Layout) -> None:
    """The parameter-server part of the session plan (see the module rules)."""
    if layout.task_type == "ps":
        run_ps_task(layout)  # blocks: a ps task's train() serves, as with tf.estimator
        return
    plan.config_proto.CopyFrom(cluster.configure(plan.config_proto, layout))
    plan.target = cluster.ensure_server(plan.config_proto, layout).target
    if mode != "train":
        # Evaluation, prediction and export read a checkpoint: run locally, never on the ps tasks
        # (which may be gone once training has finished).
        filters = [f for f in plan.config_proto.device_filters if f != "/job:ps"]
        del plan.config_proto.device_filters[:]
        plan.config_proto.device_filters.extend(filters)
        return
    plan.graph_transforms.append(lambda graph, mode_: place_graph(graph, layout))
    if not is_chief(layout):
        # The readiness op joins the graph before it is finalised; the session's creator waits on it.
        plan.graph_transforms.append(lambda graph, mode_: uninitialized_variables(graph))
        plan.wait_for_initialization = lambda session: wait_for_initialization(session, layout=layout)
    from .hooks import StartupHook

    plan.hooks.append(StartupHook())
    chief = is_chief(layout)

    def build_stop_flag():
        from . import stop_flag

        return stop_flag.for_parameter_servers(chief)
    plan.stop_flag = build_stop_flag
