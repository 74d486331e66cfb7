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
- Variables are initialised once, by whichever worker comes first: each variable's initializer
  becomes "initialise if not yet initialised", so a worker that starts late does not reset
  variables another worker is already training. (Two workers initialising at the same instant
  both write initial values before either trains.)
- Evaluation, prediction and export sessions on a worker run locally from the checkpoint (their
  sessions do not see the ps tasks).
- Within the Estimator the placement is applied to the finished training graph (a graph transform
  applying the replica_device_setter's choice to every op, colocated ops following their
  variable), because the Estimator's `plan.device` is a device string, not a device function.
  Ops inside a device loop's body (iterations_per_loop > 1) are placed by TensorFlow; use
  iterations_per_loop=1 in PS mode.
"""
from __future__ import annotations

import logging
from typing import Optional

import tensorflow as tf

from . import cluster

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
    """Serve this ps task's variables until the process is stopped (never returns)."""
    layout = layout or cluster.read_layout()
    server = cluster.ensure_server(None, layout)
    logger.info("npurun: %s serves the parameters at %s until stopped", layout.local_task, layout.address)
    server.join()


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


def initialize_once(graph) -> None:
    """Make every global (resource) variable's initializer assign only when the variable is not yet
    initialised, so `global_variables_initializer()` is safe to run on every worker."""
    with graph.as_default():
        for var in graph.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES):
            if getattr(var, "_npurun_init_once", False) or not hasattr(var, "handle"):
                continue  # already done, or a reference variable (cannot be assigned inside a cond)

            def assign(var=var):
                # The assignment is created inside the branch, so it runs only when taken.
                with tf.control_dependencies([_v1.assign(var, var.initial_value)]):
                    return tf.constant(True)

            with tf.name_scope(var.op.name + "/init_once"), tf.device(var.device):
                # The check and the assignment run where the variable lives (the ps task).
                assigned = tf.cond(var.is_initialized(), lambda: tf.constant(False), assign)
            var._initializer_op = assigned.op
            var._npurun_init_once = True


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
    plan.graph_transforms.append(lambda graph, mode_: initialize_once(graph))
    from .hooks import StartupHook

    plan.hooks.append(StartupHook())
