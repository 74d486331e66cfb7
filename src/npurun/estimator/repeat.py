"""Repeating an already-built train_op N times inside one Session.run (sess.run-mode loop sinking).

In sess.run mode the graph exists before anyone asks for a loop, so the step cannot be rebuilt
inside a loop body the way NPUEstimator does. Instead the ops the train_op needs are copied
into the body of a `tf.while_loop` (import_graph_def): the state they touch stays shared, because
the ops that *hold* state are not copied but captured from the graph: variable handles,
iterators, hash tables, and placeholders (so a fed value is used by every iteration). Every copied
op that reads state waits for the loop counter, which each iteration produces only after its
train_op ran, so iterations run one after the other.

Ref variables (`tf.compat.v1.Variable(use_resource=False)`) cannot be captured by a loop body:
a clear error says so.
"""
from __future__ import annotations

from typing import Iterable, List, Set

import tensorflow as tf

_v1 = tf.compat.v1

# Ops whose outputs are shared state (or fed values): captured into the loop, never copied.
STATE_OPS = frozenset({
    "VarHandleOp", "IteratorV2", "Iterator", "AnonymousIteratorV2", "AnonymousIteratorV3", "MultiDeviceIterator",
    "HashTableV2", "MutableHashTableV2", "MutableHashTableOfTensorsV2", "MutableDenseHashTableV2",
    "Placeholder", "PlaceholderWithDefault", "FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2",
    "StackV2", "TensorArrayV3",
})
REF_VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarIsInitializedOp"})


def _needed_ops(train_op) -> tuple:
    """(ops to copy, state ops to capture) reachable from train_op through inputs and control inputs."""
    copy: List = []
    state: Set = set()
    seen = set()
    stack = [train_op]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type in STATE_OPS:
            state.add(op)
            continue
        if op.type in REF_VARIABLE_OPS:
            raise ValueError(f"the train_op uses the ref variable {op.name!r}, which cannot be shared with a device "
                             f"loop; create variables as resource variables (the TensorFlow 2 default)")
        copy.append(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return copy, state


def _graph_def(graph, ops: Iterable, state: Set):
    """A GraphDef of `ops`: state inputs stay as inputs (mapped at import), control inputs on state
    ops are dropped, colocation constraints are dropped (they name ops outside the copy)."""
    names = {op.name for op in ops}
    full = graph.as_graph_def()
    out = _v1.GraphDef()
    out.versions.CopyFrom(full.versions)
    out.library.CopyFrom(full.library)
    state_names = {op.name for op in state}
    for node in full.node:
        if node.name not in names:
            continue
        copy = out.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        for name in node.input:
            if name.startswith("^") and name[1:] in state_names:
                continue
            copy.input.append(name)
        if "_class" in copy.attr:
            del copy.attr["_class"]
    return out


def repeat(train_op, iterations, name: str = "npurun_iteration_loop"):
    """An op that runs `train_op` `iterations` times (a Python int or a scalar int tensor) in a loop.

    The graph must not be finalised. Each iteration does everything one `sess.run(train_op)`
    does, including reading the next input element; fetching the returned op runs all of them.
    """
    graph = train_op.graph
    copy, state = _needed_ops(train_op)
    graph_def = _graph_def(graph, copy, state)
    state_outputs = [t for op in sorted(state, key=lambda o: o.name) for t in op.outputs]
    with graph.as_default(), tf.name_scope(name):
        count = tf.cast(iterations, tf.int64)

        def body(i):
            with tf.control_dependencies([i]):
                gated = {t.name: tf.identity(t) for t in state_outputs}
            step, = tf.graph_util.import_graph_def(graph_def, input_map=gated, return_elements=[train_op.name],
                                                   name="iteration")
            with tf.control_dependencies([step]):
                return (i + 1,)

        loop = tf.while_loop(lambda i: i < count, body, (tf.constant(0, tf.int64),))
        return tf.group(loop, name="run_loop")
