"""Which tensors a run computes anyway, so dumping them adds no work and reads the same run.

Rules:
- The ops of a run are the fan-in of its fetches (data and control inputs), stopping at fed
  tensors: a fed tensor's producer does not run for it.
- Ops come back in graph creation order, which is a topological order (an op's inputs exist
  before it), so "earlier in the list" means "may run earlier, never later".
- A tensor is fetchable when its op is outside control-flow contexts (a tf.v1 cond branch may not
  run; a while-loop body runs many times: neither can be fetched), the graph allows fetching it,
  and its dtype carries data (resource handles and variants do not).
- Results are cached per (graph version, fetch names, feed names): the training step runs the same
  fetches every time.
"""
from __future__ import annotations

import tensorflow as tf

_NO_DATA = (tf.resource, tf.variant)


def _graph_elements(graph, structure) -> list:
    """Tensors and Operations named by a fetch or feed structure (unknown items are skipped)."""
    if structure is None:
        return []
    if isinstance(structure, dict):
        structure = list(structure.values())  # keys of a fetch dict are labels, not graph elements
    elements = []
    for item in tf.nest.flatten(structure, expand_composites=True):
        if item is None:
            continue
        try:
            elements.append(graph.as_graph_element(item, allow_tensor=True, allow_operation=True))
        except (TypeError, ValueError, KeyError):
            continue  # e.g. a Python value fetched through a hook: nothing to scan
    return elements


def fed_tensors(graph, feed_dict) -> set:
    """Names of the tensors a feed_dict replaces."""
    if not feed_dict:
        return set()
    names = set()
    for key in feed_dict:
        for item in tf.nest.flatten(key, expand_composites=True):
            try:
                element = graph.as_graph_element(item, allow_tensor=True, allow_operation=False)
            except (TypeError, ValueError, KeyError):
                continue
            names.add(element.name)
    return names


def fan_in(graph, fetches, feed_dict=None) -> list:
    """The ops a run of `fetches` with `feed_dict` executes, in creation (topological) order."""
    fed = fed_tensors(graph, feed_dict)
    pending = []
    for element in _graph_elements(graph, fetches):
        if isinstance(element, tf.Tensor):
            if element.name not in fed:
                pending.append(element.op)
        else:
            pending.append(element)
    seen = set()
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        pending.extend(t.op for t in op.inputs if t.name not in fed)
        pending.extend(op.control_inputs)
    return [op for op in graph.get_operations() if op.name in seen]


def is_fetchable(graph, tensor) -> bool:
    """See the module rules."""
    # _get_control_flow_context is TensorFlow's own marker for tf.v1 cond/while bodies; there is
    # no public equivalent and fetching such a tensor fails or returns a dead value.
    return (tensor.dtype.base_dtype not in _NO_DATA
            and tensor.op._get_control_flow_context() is None  # pylint: disable=protected-access
            and graph.is_fetchable(tensor) and graph.is_fetchable(tensor.op))


class RunScanner:
    """Caches `fan_in` per distinct run signature."""

    def __init__(self, graph):
        self.graph = graph
        self._cache = {}

    def ops(self, run_args) -> list:
        key = (self.graph.version, _signature(self.graph, run_args.fetches),
               tuple(sorted(fed_tensors(self.graph, run_args.feed_dict))))
        if key not in self._cache:
            self._cache[key] = fan_in(self.graph, run_args.fetches, run_args.feed_dict)
        return self._cache[key]


def _signature(graph, fetches) -> tuple:
    return tuple(element.name for element in _graph_elements(graph, fetches))
