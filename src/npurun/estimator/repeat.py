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
# State ops that hand out input: a fetch computed from one of them is computed inside the loop.
INPUT_OPS = frozenset({"IteratorV2", "Iterator", "AnonymousIteratorV2", "AnonymousIteratorV3", "MultiDeviceIterator",
                       "FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2"})


def _needed_ops(*roots) -> tuple:
    """(ops to copy, state ops to capture) reachable from the root ops through inputs and control inputs."""
    copy: List = []
    state: Set = set()
    seen = set()
    stack = list(roots)
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


def _copy(graph, roots, return_elements, gate, name):
    """Copy the ops `roots` need; their state inputs are captured behind identities made after
    `gate` (so every copied op that reads state waits for it). Returns the copies of `return_elements`."""
    copy, state = _needed_ops(*roots)
    graph_def = _graph_def(graph, copy, state)
    state_outputs = [t for op in sorted(state, key=lambda o: o.name) for t in op.outputs]
    with tf.control_dependencies([gate]):
        gated = {t.name: tf.identity(t) for t in state_outputs}
    return tf.graph_util.import_graph_def(graph_def, input_map=gated, return_elements=return_elements, name=name)


def repeat(train_op, iterations, name: str = "npurun_iteration_loop"):
    """An op that runs `train_op` `iterations` times (a Python int or a scalar int tensor) in a loop.

    The graph must not be finalised. Each iteration does everything one `sess.run(train_op)`
    does, including reading the next input element; fetching the returned op runs all of them.
    """
    return repeat_with_fetches(train_op, iterations, (), name)[0]


def reads_input(fetch) -> bool:
    """Whether a tensor or op is computed from an input (iterator / queue), so depends on the element read."""
    op = getattr(fetch, "op", fetch)
    try:
        _, state = _needed_ops(op)
    except ValueError:
        return False
    return any(s.type in INPUT_OPS for s in state)


def repeat_with_fetches(train_op, iterations, fetches, name: str = "npurun_iteration_loop"):
    """(loop op, values): the loop of `repeat`, and for each of `fetches` (tensors or ops) its value
    for a run of the loop, as one Session.run of the whole graph N times gives it on Ascend.

    A fetch computed from the input (see `reads_input`: the loss, the batch) is computed inside the
    loop, from the same element as that iteration's step; its value is the last iteration's (an op
    runs in every iteration and is replaced by the loop op). Any other fetch (a variable read such
    as the global step) is computed once after the loop. A run reads exactly N input elements.
    """
    graph = train_op.graph
    handles = [f for f in fetches if isinstance(f, tf.Tensor) and f.dtype in (tf.resource, tf.variant)]
    inside = [f for f in fetches if not any(f is h for h in handles) and reads_input(f)]
    inside_tensors = [f for f in inside if isinstance(f, tf.Tensor)]
    inside_ops = [f for f in inside if not isinstance(f, tf.Tensor)]
    with graph.as_default(), tf.name_scope(name):
        count = tf.cast(iterations, tf.int64)

        def body(i, *last):
            step, *values = _copy(graph, [train_op, *(t.op for t in inside_tensors), *inside_ops],
                                  [train_op.name, *(t.name for t in inside_tensors), *(o.name for o in inside_ops)],
                                  i, "iteration")
            values, ops = values[:len(inside_tensors)], values[len(inside_tensors):]
            with tf.control_dependencies([step, *ops]):
                return (i + 1, *[tf.identity(v) for v in values])

        initial = [tf.zeros([], t.dtype) for t in inside_tensors]
        invariants = (tf.TensorShape([]), *[tf.TensorShape(None) for _ in inside_tensors])
        outputs = tf.while_loop(lambda i, *_: i < count, body, (tf.constant(0, tf.int64), *initial),
                                shape_invariants=invariants)
        outputs = tf.nest.flatten(outputs)
        loop = tf.group(*outputs, name="run_loop")
        by_fetch = {id(t): v for t, v in zip(inside_tensors, outputs[1:])}
        values = []
        for fetch in fetches:
            if id(fetch) in by_fetch:
                values.append(by_fetch[id(fetch)])
            elif fetch in inside_ops:
                values.append(loop)
            elif getattr(fetch, "op", fetch).type in STATE_OPS or any(fetch is h for h in handles):
                values.append(fetch)  # a fed value or a handle: the same inside and outside the loop
            else:
                root = getattr(fetch, "op", fetch)
                values.append(_copy(graph, [root], [fetch.name], loop, "after_loop")[0])
        return loop, values
