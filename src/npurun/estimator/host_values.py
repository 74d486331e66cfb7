"""model_fn's summaries where they cannot run: in a device loop's body or an XLA-compiled step.

With `iterations_per_loop` > 1, model_fn is called inside a `tf.while_loop` body; with whole-step
XLA compilation (`jit_compile="true"`, `mix_compile_mode=False`) inside an XLA computation. A
summary op built there can be neither fetched from the host nor compiled. `lifting()` records the
`tf.compat.v1.summary` calls model_fn makes there and turns them into a host call: their inputs
leave the loop (or compiled step) like `host_call` tensors, and the same summary ops are built on
the host and fed those values. So model_fn's summaries are written in every mode, at the steps
`save_summary_steps` selects, with that step's values. A summary of a variable shows the variable
after that step's update: the read is ordered after the step's train_op (a read racing the update
could show the same weights for two consecutive steps). In a loop an input needs a static shape
(every iteration's value is kept in a fixed-size buffer); a summary without one is left out with
a warning naming it. `combine` joins that host call with model_fn's own `host_call`.
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional

import tensorflow as tf

from tensorflow.python.distribute import summary_op_util
from tensorflow.python.ops import gen_logging_ops

_v1 = tf.compat.v1
# xla.compile makes every summary call a no-op in its computation; lifting() undoes that.
_REAL_SKIP_SUMMARY = summary_op_util.skip_summary
# The op builders tf.compat.v1.summary calls (by module attribute, so replaceable in a scope),
# captured once: whatever lifting() installs, these are what it restores and what it replays.
_SUMMARY_BUILDERS = ("scalar_summary", "histogram_summary", "image_summary", "audio_summary_v2",
                     "tensor_summary_v2")
_REAL_BUILDERS = {name: getattr(gen_logging_ops, name) for name in _SUMMARY_BUILDERS}
_REAL_MERGE = gen_logging_ops.merge_summary
# One lifting scope at a time in the process (re-entrant for nesting in one thread); threads
# outside the scope that make summaries get the real builders.
_LOCK = threading.RLock()
_SCOPES = threading.local()


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

    def host_call(self, after=None):
        """(fn, tensors) that rebuilds the summaries on the host, or None when there are none.

        `after`: the step's train_op; variables given to a summary are read after it.
        """
        if not self.summaries:
            return None
        tensors = [_value_after(t, after) for s in self.summaries for t in s.numeric.values()]

        def replay(*values):
            outputs, start = [], 0
            for summary in self.summaries:
                count = len(summary.numeric)
                outputs.append(summary.rebuild(values[start:start + count]))
                start += count
            return outputs

        return replay, tensors


class _Scope:
    """One lifting() scope: where model_fn runs (graph and control-flow context) and what it recorded."""

    def __init__(self, static_shapes: bool):
        graph = _v1.get_default_graph()
        self.graph, self.context = graph, graph._get_control_flow_context()
        self.static_shapes = static_shapes
        self.lifted = Lifted()
        self.stand_ins = []

    def covers_here(self) -> bool:
        """True where model_fn's own ops go; not in init_scope or other graphs (summaries built
        there, like the loss-scale manager's, run on the host as they are)."""
        graph = _v1.get_default_graph()
        return graph is self.graph and graph._get_control_flow_context() is self.context

    def record(self, builder_name: str, arguments: dict):
        builder = _REAL_BUILDERS[builder_name]
        name = arguments.get("name")
        numeric, constants, problem = {}, {}, None
        for key, value in arguments.items():
            if isinstance(value, tf.Variable):
                numeric[key] = value  # read in host_call(), after the step's update
                continue
            if isinstance(value, tf.Tensor) and value.dtype == tf.string:
                static = tf.get_static_value(value)
                if static is None:
                    problem = f"its string input {key!r} is computed by the model"
                constants[key] = static
            elif isinstance(value, tf.Tensor):
                numeric[key] = value
            else:
                constants[key] = value
        if isinstance(name, str):  # a name scope ("a/b/"): on the host, a plain name TF makes unique
            constants["name"] = name.rstrip("/").rsplit("/", 1)[-1] or None
        if problem is None and self.static_shapes and not all(t.shape.is_fully_defined() for t in numeric.values()):
            problem = "an input has no static shape, which a device loop needs to keep every iteration's value"
        if problem is None:
            self.lifted.summaries.append(LiftedSummary(builder, constants, numeric))
        else:
            _dropped(name, problem)
        with tf.init_scope():
            self.stand_ins.append(tf.constant(b"", name="npurun_lifted_summary"))
        return self.stand_ins[-1]


def _dispatcher(builder_name: str):
    def build(**arguments):
        scopes = getattr(_SCOPES, "stack", None)
        if scopes and scopes[-1].covers_here():
            return scopes[-1].record(builder_name, arguments)
        return _REAL_BUILDERS[builder_name](**arguments)
    return build


def _merge(inputs, name=None):
    scopes = getattr(_SCOPES, "stack", None)
    if scopes and scopes[-1].covers_here():
        with tf.init_scope():  # the inputs are stand-ins built outside
            return _REAL_MERGE(inputs=inputs, name=name)
    return _REAL_MERGE(inputs=inputs, name=name)


@contextlib.contextmanager
def lifting(static_shapes: bool):
    """Record the `tf.compat.v1.summary` calls model_fn makes inside; yields a `Lifted`.

    Enter it where model_fn is called (inside the loop body or the compiled computation). No
    summary op is built there: each call is recorded and returns an empty summary string built
    outside. `static_shapes`: whether inputs need a static shape (device loops).
    """
    with _LOCK:
        stack = _SCOPES.__dict__.setdefault("stack", [])
        scope = _Scope(static_shapes)
        if not stack:
            for builder_name in _SUMMARY_BUILDERS:
                setattr(gen_logging_ops, builder_name, _dispatcher(builder_name))
            gen_logging_ops.merge_summary = _merge
        stack.append(scope)
        skip = summary_op_util.skip_summary
        summary_op_util.skip_summary = _REAL_SKIP_SUMMARY
        try:
            yield scope.lifted
        finally:
            summary_op_util.skip_summary = skip
            stack.pop()
            if not stack:
                for builder_name, builder in _REAL_BUILDERS.items():
                    setattr(gen_logging_ops, builder_name, builder)
                gen_logging_ops.merge_summary = _REAL_MERGE
    # The stand-ins are no summaries to merge: the host call writes the real ones.
    ours = {id(t) for t in scope.stand_ins}
    for graph in {id(t.graph): t.graph for t in scope.stand_ins}.values():
        collection = graph.get_collection_ref(_v1.GraphKeys.SUMMARIES)
        collection[:] = [t for t in collection if id(t) not in ours]


def _value_after(value, after):
    """A recorded input as a tensor: a variable is read once `after` (the step's update) ran."""
    if not isinstance(value, tf.Variable):
        return value
    with tf.control_dependencies([after] if after is not None else []):
        return tf.identity(value.read_value())


def _dropped(name, why: str) -> None:
    warnings.warn(f"npurun: the summary {name!r} built by model_fn cannot leave the device loop or compiled "
                  f"step: {why}; it is not written. Give it a static shape, or use NPUEstimatorSpec(host_call=...)",
                  UserWarning, stacklevel=5)  # model_fn, through tf.compat.v1.summary


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
