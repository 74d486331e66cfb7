"""Keras metric objects (`tf.keras.metrics.Mean()`, `AUC()`, ...) as `eval_metric_ops` entries.

tf.estimator accepts a metric object whose `update_state(...)` the model_fn called, and turns
it into a `(result(), update op)` pair whose variables are local (initialised with the other
metric accumulators, never checkpointed). Keras 3 in a graph records no update op and puts its
variables in the global collection, so here:
  - the metric's variables are the graph's variables behind `metric.variables`; they move from
    the global (checkpointed) collection to the local and metric-variable collections, so every
    evaluate() starts them from zero and a checkpoint is never asked for them;
  - the update op groups the graph's writes to those variables that are not their initialisers
    (what `update_state` built), or is `metric.updates[0]` when Keras recorded one;
  - the value is `metric.result()`, built in the metric's graph.
"""
from __future__ import annotations

import tensorflow as tf

_v1 = tf.compat.v1
_WRITE_OPS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceScatterAdd",
              "ResourceScatterUpdate", "ResourceScatterSub", "ResourceScatterNdAdd", "ResourceScatterNdUpdate",
              "Assign", "AssignAdd", "AssignSub", "ScatterAdd", "ScatterUpdate", "ScatterNdAdd"}


def is_metric(value) -> bool:
    """A Keras metric object (Keras 3, tf-keras or anything with that protocol)."""
    return (not isinstance(value, (tuple, list)) and callable(getattr(value, "update_state", None))
            and callable(getattr(value, "result", None)) and hasattr(value, "variables"))


def _graph_variable(variable):
    """The tf.Variable behind a Keras variable (Keras 3 wraps one as `.value`)."""
    for candidate in (variable, getattr(variable, "_value", None), getattr(variable, "value", None)):
        if isinstance(candidate, tf.Variable) and hasattr(candidate, "op"):
            return candidate
    raise ValueError(f"The Keras metric variable {variable!r} is not a graph variable: create the metric inside "
                     f"model_fn (eval_metric_ops with a metric object needs its variables in the model's graph)")


def _move_to_local(graph, variables):
    global_collection = graph.get_collection_ref(_v1.GraphKeys.GLOBAL_VARIABLES)
    keep = [v for v in global_collection if all(v is not m for m in variables)]
    global_collection[:] = keep
    for key in (_v1.GraphKeys.LOCAL_VARIABLES, _v1.GraphKeys.METRIC_VARIABLES):
        present = graph.get_collection(key)
        for variable in variables:
            if all(variable is not p for p in present):
                graph.add_to_collection(key, variable)


def _writes(graph, variables):
    """The ops of `graph` that write to `variables`, except their initialisers."""
    handles = {v.handle.name if hasattr(v, "handle") else v.op.outputs[0].name for v in variables}
    initializers = {v.initializer.name for v in variables}
    return [op for op in graph.get_operations()
            if op.type in _WRITE_OPS and op.inputs and op.inputs[0].name in handles and op.name not in initializers]


def as_pair(name, metric):
    """(value tensor, update op) for a metric object whose update_state model_fn called."""
    variables = [_graph_variable(v) for v in metric.variables]
    if not variables:
        raise ValueError(f"eval_metric_ops[{name!r}]: the metric {getattr(metric, 'name', metric)!r} has no variables")
    graph = variables[0].graph
    recorded = list(getattr(metric, "updates", None) or [])
    updates = recorded[:1] or _writes(graph, variables)
    if not updates:  # checked first, as tf.estimator does
        raise ValueError(f"Please call update_state(...) on the \"{getattr(metric, 'name', name)}\" metric "
                         f"(eval_metric_ops[{name!r}]) inside model_fn")
    if graph is not _v1.get_default_graph():
        raise ValueError(f"eval_metric_ops with \"{name}\" must be from the default graph: the metric's variables "
                         f"belong to another graph. Create the metric inside model_fn")
    _move_to_local(graph, variables)
    with graph.as_default():
        value = tf.convert_to_tensor(metric.result())
        update = tf.group(*updates, name=f"{_safe(name)}_update")
    return value, update


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in str(name)) or "metric"
