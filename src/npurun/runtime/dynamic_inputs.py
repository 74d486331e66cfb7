"""Dynamic inputs: `dynamic_input`, `dynamic_inputs_shape_range` (and `dynamic_graph_execute_mode`).

Rules:
  - Only with `dynamic_input=True` and a `dynamic_inputs_shape_range`; otherwise nothing changes.
  - `getnext` ranges apply to the dataset inputs: the components of one dataset element, flattened
    in `tf.nest` order (features dict keys sorted, then labels), i.e. the outputs of the
    iterator's GetNext, in order. `data` ranges apply to the graph's Placeholder ops, in definition
    order when none was given a name (all named Placeholder, Placeholder_1, ...), else in
    alphabetical order of their names (the seed's rule).
  - The number of ranges must equal the number of inputs, and each range's rank the input's rank
    (checked when the graph is built when the rank is known, at run time otherwise): ValueError.
  - Fixed dimensions become static in the input's shape; ranged and -1 dimensions stay dynamic.
  - At run time every dimension is checked; a size outside its range fails the step with an
    InvalidArgumentError whose message names the input (kind, index, name), the dimension, the
    size received and the allowed range, e.g.
      "dynamic_inputs_shape_range: getnext input 0 (x), dimension 0: size" [200] "is outside 2~128"
  - `lazy_recompile` needs iterations_per_loop=1 (a construction-time rule). Both execute modes
    run one TensorFlow graph for the whole range here; XLA, when it compiles, compiles each
    distinct shape when first seen.

What the Estimator calls: `apply_to_dataset(options, dataset)` on the dataset its input_fn
returned, before batching it for a device loop. When it does not, the graph transform added here
checks the outputs of top-level IteratorGetNext ops instead; Placeholders are always handled by
the graph transform.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..config import parsers
from .plan import Options, SessionPlan

APPLIED_COLLECTION = "npurun_dynamic_inputs_getnext_applied"
_DEFAULT_PLACEHOLDER_NAME = re.compile(r"Placeholder(_\d+)?$")


def shape_ranges(options: Options) -> parsers.ShapeRanges | None:
    """The parsed ranges when they apply (dynamic_input=True and a range given), else None."""
    if not options.get("dynamic_input") or not options.get("dynamic_inputs_shape_range"):
        return None
    return parsers.parse_shape_ranges(options["dynamic_inputs_shape_range"])


def static_shape(shape: parsers.Shape) -> list:
    """Fixed dimensions as ints, the others None."""
    return [d.lo if d.hi == d.lo else None for d in shape]


def check_tensor(tensor, shape: parsers.Shape, kind: str, index: int, label: str):
    """`tensor` after run-time checks of every dimension against `shape`, with fixed dims static."""
    import tensorflow as tf

    where = f"dynamic_inputs_shape_range: {kind} input {index} ({label})"
    rank = tensor.shape.rank
    if rank is not None and rank != len(shape):
        raise ValueError(f"{where} has rank {rank} (shape {tensor.shape}), but its range "
                         f"[{','.join(map(str, shape))}] has rank {len(shape)}")
    for d, (known, allowed) in enumerate(zip(tensor.shape.as_list() if rank is not None else [], shape)):
        if known is not None and not allowed.contains(known):
            raise ValueError(f"{where}, dimension {d}: static size {known} is outside its range {allowed}")
    checks = []
    with tf.name_scope(f"dynamic_input_check_{kind}_{index}"):
        if rank is None:
            checks.append(tf.debugging.Assert(tf.equal(tf.rank(tensor), len(shape)),
                                              [f"{where}: rank", tf.rank(tensor), f"is not {len(shape)}"]))
        sizes = tf.shape(tensor)
        for d, allowed in enumerate(shape):
            if allowed.hi is None:
                continue  # -1: any size
            size = sizes[d]
            ok = tf.logical_and(size >= allowed.lo, size <= allowed.hi)
            checks.append(tf.debugging.Assert(ok, [f"{where}, dimension {d}: size", size,
                                                   f"is outside {allowed.lo}~{allowed.hi}" if allowed.lo != allowed.hi
                                                   else f"is not {allowed.lo}"]))
        with tf.control_dependencies(checks):
            checked = tf.identity(tensor)
    checked.set_shape(static_shape(shape))
    return checked


def _count_error(kind: str, ranges: Sequence, found: Sequence[str]) -> ValueError:
    return ValueError(f"dynamic_inputs_shape_range gives {len(ranges)} {kind} shape(s), but the graph has "
                      f"{len(found)} {kind} input(s): {', '.join(found) or 'none'}; give one range per input")


def apply_to_dataset(options: Options, dataset):
    """`dataset` whose elements are checked against the `getnext` ranges (module rules)."""
    ranges = shape_ranges(options)
    if ranges is None or not ranges.getnext:
        return dataset
    import tensorflow as tf
    from tensorflow.python.util import nest

    spec = dataset.element_spec
    labels = [path or "element" for path, _ in nest.flatten_with_joined_string_paths(spec)]
    if len(labels) != len(ranges.getnext):
        raise _count_error("getnext", ranges.getnext, labels)

    def check(*args):
        element = args if isinstance(spec, tuple) else args[0]
        flat = tf.nest.flatten(element)
        checked = [check_tensor(t, r, "getnext", i, labels[i]) for i, (t, r) in enumerate(zip(flat, ranges.getnext))]
        return tf.nest.pack_sequence_as(element, checked)

    tf.compat.v1.add_to_collection(APPLIED_COLLECTION, True)
    return dataset.map(check)


def ordered_placeholders(graph) -> list:
    """The graph's Placeholder ops in the seed's order (definition order, or by name when named)."""
    placeholders = [op for op in graph.get_operations() if op.type == "Placeholder"]
    if all(_DEFAULT_PLACEHOLDER_NAME.fullmatch(op.name.rsplit("/", 1)[-1]) for op in placeholders):
        return placeholders
    return sorted(placeholders, key=lambda op: op.name)


def _reroute(graph, tensor, replacement, keep: set) -> None:
    """Make every consumer of `tensor` (except the ops in `keep`) read `replacement`."""
    for consumer in list(tensor.consumers()):
        if consumer in keep:
            continue
        for i, source in enumerate(consumer.inputs):
            if source is tensor:
                consumer._update_input(i, replacement)  # graph surgery before the graph is finalised


def _guard(graph, tensor, shape, kind: str, index: int, label: str) -> None:
    before = set(graph.get_operations())
    checked = check_tensor(tensor, shape, kind, index, label)
    new_ops = set(graph.get_operations()) - before
    _reroute(graph, tensor, checked, new_ops)


def input_checks(ranges: parsers.ShapeRanges):
    """A graph transform checking Placeholders (`data`) and, when `apply_to_dataset` was not
    used, the outputs of top-level IteratorGetNext ops (`getnext`)."""

    def transform(graph, mode: str) -> None:
        with graph.as_default():
            if ranges.data:
                placeholders = ordered_placeholders(graph)
                if len(placeholders) != len(ranges.data):
                    raise _count_error("data", ranges.data, [op.name for op in placeholders])
                for i, (op, shape) in enumerate(zip(placeholders, ranges.data)):
                    _guard(graph, op.outputs[0], shape, "data", i, op.name)
            if ranges.getnext and not graph.get_collection(APPLIED_COLLECTION):
                outputs = [t for op in graph.get_operations() if op.type in ("IteratorGetNext", "IteratorGetNextSync")
                           for t in op.outputs]
                if outputs:
                    if len(outputs) != len(ranges.getnext):
                        raise _count_error("getnext", ranges.getnext, [t.name for t in outputs])
                    for i, (tensor, shape) in enumerate(zip(outputs, ranges.getnext)):
                        _guard(graph, tensor, shape, "getnext", i, tensor.name)

    return transform


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    ranges = shape_ranges(options)
    if ranges is not None:
        plan.graph_transforms.append(input_checks(ranges))
