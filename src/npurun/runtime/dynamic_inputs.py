"""Dynamic inputs: `dynamic_input`, `dynamic_inputs_shape_range` and `dynamic_graph_execute_mode`.

Rules:
  - Only with `dynamic_input=True`; ranges need a `dynamic_inputs_shape_range`. Otherwise nothing
    changes.
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

  `dynamic_graph_execute_mode` says how the step is compiled for the range. It matters only when
  XLA compiles, because XLA compiles one executable per distinct input shape:
  - `dynamic_execute` (default) with whole-step XLA compilation (`resolve_jit(...).mode ==
    "whole"`): compile once for the range. Every ranged input (`lo~hi` dimensions) that feeds an
    XLA computation is padded with zeros to its upper bounds outside the computation, and inside
    it each padded dimension becomes an XLA bounded dynamic dimension
    (`XlaSetDynamicDimensionSize`: bound = the upper bound, size = the real size). XLA's dynamic
    padder then computes as if the padding were not there (reductions, means and gradients see
    only the real elements; `tf.shape` gives the real size), and every shape in the range runs
    one executable, compiled at the first step. The TensorFlow graph around the computation
    keeps the ranged shapes, so model code sees the same static shapes in both modes.
    A `-1` dimension has no bound to pad to: XLA compiles one executable per distinct size of it
    (UserWarning when the graph is finalised).
  - `lazy_recompile` (needs iterations_per_loop=1, a construction-time rule): nothing is padded;
    XLA compiles an executable for each distinct input shape when it first arrives and reuses it
    when that shape comes again.
  - Without XLA (jit_compile off, which "auto" is on a CPU) the TensorFlow executor runs one graph
    for every shape and compiles nothing per shape: `dynamic_execute` is what happens anyway, and
    `lazy_recompile` has no effect (UserWarning when the plan is built).
  - With XLA auto-clustering (mix_compile_mode=True) TensorFlow's clustering pass picks the
    clusters after the graph is finalised, so nothing can be placed inside the cluster that reads
    an input; every cluster is compiled per distinct shape of its inputs (TensorFlow compiles a new
    shape at its second run and runs the cluster in TensorFlow before that), so `dynamic_execute`
    behaves as `lazy_recompile` there (UserWarning when the plan is built).
  - `dynamic_execute` with whole-step compilation but no `dynamic_inputs_shape_range`: no bounds,
    so XLA compiles per shape (UserWarning when the plan is built).

What the Estimator calls: `apply_to_dataset(options, dataset)` on the dataset its input_fn
returned, before batching it for a device loop. When it does not, the graph transform added here
checks the outputs of top-level IteratorGetNext ops instead; Placeholders are always handled by
the graph transform. Padding for `dynamic_execute` is done by the graph transform in both cases
(also for a device loop's stacked input, whose leading dimension is the loop's iterations).
"""
from __future__ import annotations

import re
import warnings
from typing import Sequence

from ..config import parsers
from .dynamic_execute import bound_for_xla, compiled_consumers, negative_index_slices
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

    # An int: a bool in a collection cannot be written to a MetaGraphDef (Saver warns at every save).
    tf.compat.v1.add_to_collection(APPLIED_COLLECTION, 1)
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


def _guard(graph, tensor, shape, kind: str, index: int, label: str):
    """Check `tensor` against `shape` for all its consumers; returns the checked tensor."""
    before = set(graph.get_operations())
    checked = check_tensor(tensor, shape, kind, index, label)
    new_ops = set(graph.get_operations()) - before
    _reroute(graph, tensor, checked, new_ops)
    return checked


def _getnext_outputs(graph) -> list:
    return [t for op in graph.get_operations() if op.type in ("IteratorGetNext", "IteratorGetNextSync")
            for t in op.outputs]


class FeedCheck:
    """The `data` ranges of a session created before its graph was built, checked on what it is fed.

    TF 1 scripts often create their sessions first (`sess = tf.Session(config=...)`, then the model
    class builds its graph; ViDeNN_ID1146 makes a static and a dynamic-input session that way, over one
    graph). The Ascend adapter applies the ranges when the session first runs its graph; changing the
    graph then would change it for every session over it (and TensorFlow refuses a graph changed after
    another session ran it), so this session alone checks the values fed to the Placeholders, with
    the same messages. The Placeholders are found (and counted) at the first run.
    """

    def __init__(self, data: Sequence[parsers.Shape]):
        self._ranges = tuple(data)
        self.deferred = False
        self._placeholders = None

    def check(self, graph, feed_dict) -> None:
        if not self.deferred:
            return
        if self._placeholders is None:
            placeholders = ordered_placeholders(graph)
            if len(placeholders) != len(self._ranges):
                raise _count_error("data", self._ranges, [op.name for op in placeholders])
            self._placeholders = [op.outputs[0] for op in placeholders]
        if not feed_dict:
            return
        import numpy

        fed = {}
        for key, value in feed_dict.items():
            try:
                fed[graph.as_graph_element(key) if isinstance(key, str) else key] = value
            except (KeyError, ValueError, TypeError):
                continue  # not a tensor of this graph: TensorFlow's own run reports it
        for index, (tensor, shape) in enumerate(zip(self._placeholders, self._ranges)):
            if tensor not in fed:
                continue
            where = f"dynamic_inputs_shape_range: data input {index} ({tensor.op.name})"
            sizes = numpy.shape(fed[tensor])
            if len(sizes) != len(shape):
                raise ValueError(f"{where} has rank {len(sizes)} (shape {list(sizes)}), but its range "
                                 f"[{','.join(map(str, shape))}] has rank {len(shape)}")
            for d, (size, allowed) in enumerate(zip(sizes, shape)):
                if not allowed.contains(size):
                    raise ValueError(f"{where}, dimension {d}: size {size} is outside {allowed}")


def input_transform(ranges: parsers.ShapeRanges, bound: bool = False, feed_check: FeedCheck | None = None):
    """A graph transform for the ranged inputs (module rules).

    It checks Placeholders (`data`) and, when `apply_to_dataset` was not used, the outputs of
    top-level IteratorGetNext ops (`getnext`). With `bound` (dynamic_execute under whole-step XLA
    compilation) it also hands every ranged input that feeds an XLA computation to `bound_for_xla`.
    An empty graph (a session created before its graph: an Estimator's graph always has ops by then)
    leaves the `data` ranges to `feed_check`, which the session runs on its feeds.
    """

    def transform(graph, mode: str) -> None:
        with graph.as_default():
            inputs = []  # (tensor, shape, kind, index, label, check)
            if ranges.data and feed_check is not None and not graph.get_operations():
                feed_check.deferred = True
            elif ranges.data:
                placeholders = ordered_placeholders(graph)
                if len(placeholders) != len(ranges.data):
                    raise _count_error("data", ranges.data, [op.name for op in placeholders])
                inputs += [(op.outputs[0], shape, "data", i, op.name, True)
                           for i, (op, shape) in enumerate(zip(placeholders, ranges.data))]
            if ranges.getnext:
                check = not graph.get_collection(APPLIED_COLLECTION)
                outputs = _getnext_outputs(graph)
                if len(outputs) == len(ranges.getnext):
                    inputs += [(t, shape, "getnext", i, t.name, check)
                               for i, (t, shape) in enumerate(zip(outputs, ranges.getnext))]
                elif outputs and (check or (bound and any(compiled_consumers(t) for t in outputs))):
                    raise _count_error("getnext", ranges.getnext, [t.name for t in outputs])
            bounded = set()
            for tensor, shape, kind, index, label, check in inputs:
                if check:
                    tensor = _guard(graph, tensor, shape, kind, index, label)
                if bound:
                    clusters = set(compiled_consumers(tensor))
                    where = f"dynamic_inputs_shape_range: {kind} input {index} ({label})"
                    if bound_for_xla(graph, tensor, shape, where):
                        bounded |= clusters
            slices = negative_index_slices(graph, bounded) if bounded else []
            if slices:
                names = ", ".join(slices[:5]) + (", ..." if len(slices) > 5 else "")
                warnings.warn(f"dynamic_graph_execute_mode='dynamic_execute': {len(slices)} slice(s) index a "
                              f"dimension of unknown size from its end with a constant negative index ({names}). "
                              f"Under XLA's bounded dynamic dimensions such an index counts from the upper bound "
                              f"of dynamic_inputs_shape_range and reads the padding. Index from the real size "
                              f"(tf.gather(x, tf.shape(x)[0] - 1)) or use dynamic_graph_execute_mode='lazy_recompile'",
                              UserWarning, stacklevel=2)

    return transform


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    """The graph transform for the ranges, padding for XLA when dynamic_execute can compile once
    for the range; the warnings of the module rules."""
    if not options.get("dynamic_input"):
        return
    from .compilation import resolve_jit

    ranges = shape_ranges(options)
    execute = options.get("dynamic_graph_execute_mode", "dynamic_execute")
    choice = resolve_jit(options)
    bound = False
    if choice.mode == "off" and execute == "lazy_recompile":
        warnings.warn(f"dynamic_graph_execute_mode='lazy_recompile' has no effect here: XLA does not compile "
                      f"({choice.reason}), and TensorFlow's executor runs one graph for every input shape "
                      f"without compiling per shape", UserWarning, stacklevel=2)
    elif choice.mode == "mixed" and execute == "dynamic_execute":
        warnings.warn("dynamic_graph_execute_mode='dynamic_execute' cannot compile once for the whole range "
                      "with mix_compile_mode=True: XLA auto-clustering picks its clusters after the graph is "
                      "finalised and compiles each one per distinct shape of its inputs (as lazy_recompile); "
                      "mix_compile_mode=False compiles the whole step once for dynamic_inputs_shape_range",
                      UserWarning, stacklevel=2)
    elif choice.mode == "whole" and execute == "dynamic_execute":
        if ranges is None:
            warnings.warn("dynamic_graph_execute_mode='dynamic_execute' needs dynamic_inputs_shape_range to compile "
                          "once for a range; without it XLA compiles one executable per distinct input shape",
                          UserWarning, stacklevel=2)
        else:
            bound = True
    if ranges is not None:
        feed_check = FeedCheck(ranges.data) if ranges.data else None
        if feed_check is not None:
            plan.feed_checks.append(feed_check)
        plan.graph_transforms.append(input_transform(ranges, bound, feed_check))
