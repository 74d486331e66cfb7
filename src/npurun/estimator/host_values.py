"""Values that must leave a device loop or a compiled step for the host: summaries and hook fetches.

With `iterations_per_loop` > 1, model_fn is called inside a `tf.while_loop` body; with whole-step
XLA compilation (`jit_compile="true"`, `mix_compile_mode=False`) inside an XLA computation. Ops
built there cannot be fetched by a Session.run. Two things users build in model_fn expect that:

- `tf.compat.v1.summary` ops. `lifting()` collects the summaries model_fn builds and turns them
  into a host call: their numeric inputs leave the loop (or compiled step) like `host_call`
  tensors, and the same summary ops are rebuilt on the host and fed those values. So per-step
  summaries of model_fn are written in every mode, at the steps `save_summary_steps` selects.
  A summary whose input has no static shape cannot be kept per iteration in a loop; it is
  dropped with a warning naming it.
- Hook fetches. `InnerFetches` maps the loss model_fn returned to its value on the host (the last
  iteration's loss in a loop), and rejects other inner tensors with an error naming the hook and
  the tensor (instead of TensorFlow's "not an element of this graph").
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional

import tensorflow as tf

from tensorflow.python.distribute import summary_op_util

_v1 = tf.compat.v1
# xla.compile makes every summary call a no-op in its computation; lifting() undoes that.
_REAL_SKIP_SUMMARY = summary_op_util.skip_summary
# The op builders tf.compat.v1.summary calls (by module attribute, so replaceable in a scope).
_SUMMARY_BUILDERS = ("scalar_summary", "histogram_summary", "image_summary", "audio_summary_v2",
                     "tensor_summary_v2")
_COMPILE_ID_ATTR = "_xla_compile_id"


@dataclass
class LiftedSummary:
    """One summary model_fn asked for: its op builder, constant arguments and numeric tensors."""

    builder: Callable
    constants: dict
    numeric: dict  # argument name -> tensor built by model_fn

    def rebuild(self, values: List[Any]):
        """The summary op in the current graph, with `values` for the numeric arguments."""
        return self.builder(**self.constants, **dict(zip(self.numeric, values)))


@dataclass
class Lifted:
    """The summaries collected by `lifting()`."""

    summaries: List[LiftedSummary] = field(default_factory=list)

    def host_call(self):
        """(fn, tensors) that rebuilds the summaries on the host, or None when there are none."""
        if not self.summaries:
            return None
        tensors = [t for s in self.summaries for t in s.numeric.values()]

        def replay(*values):
            outputs, start = [], 0
            for summary in self.summaries:
                count = len(summary.numeric)
                outputs.append(summary.rebuild(values[start:start + count]))
                start += count
            return outputs

        return replay, tensors


@contextlib.contextmanager
def lifting(static_shapes: bool):
    """Record the `tf.compat.v1.summary` calls made inside; yields a `Lifted`.

    No summary op is built inside (XLA cannot compile one, and a loop body's ops cannot be
    fetched): each call is recorded and returns an empty summary string built outside. Their
    numeric inputs then leave the loop or computation through the host call. `static_shapes`:
    whether numeric inputs need a static shape (a device loop keeps every iteration's values in
    fixed-size buffers); a summary without one is dropped with a warning.
    """
    from tensorflow.python.ops import gen_logging_ops

    lifted = Lifted()
    stand_ins = []
    originals = {name: getattr(gen_logging_ops, name) for name in _SUMMARY_BUILDERS}
    original_merge = gen_logging_ops.merge_summary

    def recorder(builder):
        def record(**arguments):
            name = arguments.get("name")
            numeric = {k: v for k, v in arguments.items() if isinstance(v, tf.Tensor) and v.dtype != tf.string}
            constants = {k: v for k, v in arguments.items() if k not in numeric}
            if isinstance(name, str):  # a name scope ("a/b/"): on the host, a plain name TF can make unique
                constants["name"] = name.rstrip("/").rsplit("/", 1)[-1] or None
            if any(isinstance(v, tf.Tensor) for v in constants.values()):
                _dropped(name, "its tag is a tensor, not a constant")
            elif static_shapes and not all(t.shape.is_fully_defined() for t in numeric.values()):
                _dropped(name, "an input has no static shape, which a device loop needs to keep every "
                               "iteration's value")
            else:
                lifted.summaries.append(LiftedSummary(builder, constants, numeric))
            with tf.init_scope():
                stand_ins.append(tf.constant(b"", name="npurun_lifted_summary"))
            return stand_ins[-1]
        return record

    def merge(inputs, name=None):
        with tf.init_scope():  # the inputs are the stand-ins built outside
            return original_merge(inputs=inputs, name=name)

    skip = summary_op_util.skip_summary
    try:
        summary_op_util.skip_summary = _REAL_SKIP_SUMMARY
        for name, builder in originals.items():
            setattr(gen_logging_ops, name, recorder(builder))
        gen_logging_ops.merge_summary = merge
        yield lifted
    finally:
        summary_op_util.skip_summary = skip
        for name, builder in originals.items():
            setattr(gen_logging_ops, name, builder)
        gen_logging_ops.merge_summary = original_merge
    # The stand-ins are no summaries to merge: the host call writes the real ones.
    ours = {id(t) for t in stand_ins}
    for graph in {id(t.graph): t.graph for t in stand_ins}.values():
        collection = graph.get_collection_ref(_v1.GraphKeys.SUMMARIES)
        collection[:] = [t for t in collection if id(t) not in ours]


def _dropped(name, why: str) -> None:
    warnings.warn(f"npurun: the summary {name!r} built by model_fn cannot leave the device loop or compiled "
                  f"step: {why}; it is not written. Give it a static shape, or use NPUEstimatorSpec(host_call=...)",
                  UserWarning, stacklevel=4)


def is_inner(tensor_or_op, outer_graph) -> bool:
    """True for an op or tensor built in a loop body or inside a compiled step."""
    op = getattr(tensor_or_op, "op", tensor_or_op)
    if getattr(op, "graph", outer_graph) is not outer_graph:
        return True
    try:
        op.get_attr(_COMPILE_ID_ATTR)
        return True
    except (ValueError, AttributeError):
        return False


def combine(*host_calls) -> Optional[tuple]:
    """One (fn, list of tensors) host call running each given (fn, tensors) on its share of the
    values; `tensors` may be a list or a dict (passed as keyword arguments, keys sorted)."""
    calls = [c for c in host_calls if c is not None]
    if not calls:
        return None
    if len(calls) == 1 and not isinstance(calls[0][1], dict):
        return calls[0][0], list(calls[0][1])
    parts, tensors = [], []
    for fn, structure in calls:
        keys = sorted(structure) if isinstance(structure, dict) else None
        flat = [structure[k] for k in keys] if keys is not None else list(structure)
        parts.append((fn, keys, len(flat)))
        tensors.extend(flat)

    def combined(*values):
        outputs, start = [], 0
        for fn, keys, count in parts:
            share = values[start:start + count]
            start += count
            result = fn(**dict(zip(keys, share))) if keys is not None else fn(*share)
            if result is not None:
                outputs.extend(tf.nest.flatten(result))
        return outputs

    return combined, tensors


class InnerTensorError(ValueError):
    """A hook fetches a tensor that model_fn built inside a device loop or compiled step."""


class InnerFetches:
    """Translates hook fetches of tensors built in a loop body or compiled step (module doc).

    `known` maps such tensors to tensors of the outer graph holding their host-side value.
    Translations are cached per fetch object, so a hook returning the same fetches every run
    costs one dict lookup.
    """

    def __init__(self, graph, known: list, where: str):
        """`known`: (inner tensor, outer tensor) pairs."""
        self.graph = graph
        self.known = {_key(k): v for k, v in known}
        self.where = where
        self._cache = {}

    def adopt(self, hooks) -> None:
        """Before the hooks' begin(): replace the inner tensors hooks hold (LoggingTensorHook's
        tensors, NanTensorHook's loss, ...) by their host-side tensors, or fail naming them.
        Attributes holding no inner tensor are left as they are (the same objects)."""
        for hook in hooks:
            for name, value in list(vars(hook).items()):
                if not isinstance(value, (tf.Tensor, tf.Operation, dict, list, tuple)):
                    continue
                try:
                    leaves = tf.nest.flatten(value)
                except (TypeError, ValueError):
                    continue  # not a structure tf.nest understands
                if any(isinstance(leaf, (tf.Tensor, tf.Operation)) and is_inner(leaf, self.graph)
                       for leaf in leaves):
                    setattr(hook, name, tf.nest.map_structure(lambda f: self._one(hook, f, resolve=False), value))

    def translate(self, hook, fetches):
        entry = self._cache.get(id(fetches))
        if entry is not None and entry[0] is fetches:
            return entry[1]
        translated = tf.nest.map_structure(lambda f: self._one(hook, f), fetches)
        self._cache[id(fetches)] = (fetches, translated)
        return translated

    def _one(self, hook, fetch, resolve=True):
        element = fetch
        if resolve and isinstance(fetch, str):
            element = self.graph.as_graph_element(fetch)
        if isinstance(element, (tf.Tensor, tf.Operation)) and is_inner(element, self.graph):
            known = self.known.get(_key(element))
            if known is not None:
                return known
            raise InnerTensorError(
                f"{type(hook).__name__} fetches {element.name}, which model_fn built {self.where}; such "
                f"tensors cannot be fetched from the host. Fetch the loss (npurun gives its last value), "
                f"pass the tensor through NPUEstimatorSpec(host_call=...) or a tf.compat.v1.summary, or "
                f"train with iterations_per_loop=1 and jit_compile='false'")
        return fetch


def _key(element):
    return element.ref() if isinstance(element, tf.Tensor) else element
