"""Hooks and the tensors model_fn builds where the host cannot fetch them.

With `iterations_per_loop` > 1, model_fn is called inside a `tf.while_loop` body; with whole-step
XLA compilation inside an XLA computation. A hook fetching such a tensor would get TensorFlow's
"not an element of this graph" or "not fetchable" error. `InnerFetches` gives hooks the loss
model_fn returned as its host-side value (the last iteration's loss in a loop) and turns a fetch
of any other inner tensor into an `InnerTensorError` naming the hook and the tensor.
"""
from __future__ import annotations

import functools
import re
from typing import Optional

import tensorflow as tf
from tensorflow.python.client.session import SessionInterface as _SessionInterface

from ..precision.optimizer import OVERFLOW_STATUS_NAME as _OVERFLOW_STATUS

_COMPILE_ID_ATTR = "_xla_compile_id"
_LOOP_SCOPE = re.compile(r"^(.*/)?npurun_device_loop(_\d+)?/")
_MAX_NAMED = 32  # top-level named scalars carried out of a loop
_MAX_CACHED = 32
# Top-level scalars that are not values model_fn computes (constants, inputs, variable reads)
_NOT_NAMED_VALUES = frozenset({"Const", "Placeholder", "PlaceholderWithDefault", "VarHandleOp", "VariableV2",
                               "ReadVariableOp", "NoOp"})


class InnerTensorError(ValueError):
    """A hook fetches a tensor that model_fn built inside a device loop or compiled step."""


def is_inner(tensor_or_op, outer_graph) -> bool:
    """True for an op or tensor built in a loop body (control flow v2: a function graph; v1: a
    while context) or inside an XLA computation."""
    op = getattr(tensor_or_op, "op", tensor_or_op)
    if getattr(op, "graph", outer_graph) is not outer_graph:
        return True
    if op._get_control_flow_context() is not None:  # a v1 while context or xla.compile's context
        return True
    try:
        op.get_attr(_COMPILE_ID_ATTR)
        return True
    except (ValueError, AttributeError):
        return False


def variable_value(element):
    """The value of the resource variable whose handle `element` is, else `element`.

    TensorFlow 1.15's variables were ref variables: the tensor 'global_step:0' (or 'loss_scale:0')
    fetched by name was the variable's value. A resource variable's 'name:0' is its handle; its value is
    the read graph mode makes when the variable is built ('name/Read/ReadVariableOp:0'), which exists
    also in a finalized graph.
    """
    if isinstance(element, tf.Tensor) and element.dtype == tf.resource and element.op.type == "VarHandleOp":
        read = element.op.name + "/Read/ReadVariableOp"
        for consumer in element.consumers():
            if consumer.type == "ReadVariableOp" and consumer.name == read:
                return consumer.outputs[0]
    return element


def values_by_name(graph, fetches):
    """`fetches` with each name of a resource variable ('global_step:0') replaced by its value."""
    leaves = tf.nest.flatten(fetches)
    if not any(isinstance(leaf, str) for leaf in leaves):
        return fetches

    def one(fetch):
        if not isinstance(fetch, str):
            return fetch
        try:
            element = graph.as_graph_element(fetch)
        except (KeyError, ValueError, TypeError):
            return fetch  # Session.run reports it
        value = variable_value(element)
        return fetch if value is element else value

    return tf.nest.map_structure(one, fetches)


def named_in_body(hooks) -> list:
    """The tensors of the current graph (a loop body) that LoggingTensorHooks among `hooks` name by string
    (official-models scripts log 'learning_rate', 'cross_entropy', 'train_accuracy' so), and those other hooks'
    code names in `get_tensor_by_name("...")` (`hook_tensor_names`)."""
    graph = tf.compat.v1.get_default_graph()
    found = []
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.LoggingTensorHook):
            found += [t for t in _by_hook_names(graph, hook_tensor_names(type(hook))) if t not in found]
            continue
        for name in tf.nest.flatten(getattr(hook, "_tensors", {})):
            if not isinstance(name, str):
                continue
            element = _in_body(graph, name if ":" in name else f"{name}:0")
            if isinstance(element, tf.Tensor):
                found.append(element)
    return found


_MAX_HOOK_NAMED = 64  # tensors hooks' code names, carried out of a loop


@functools.lru_cache(maxsize=256)
def hook_tensor_names(hook_class) -> tuple:
    """Patterns of the tensor names a hook class's code fetches with `get_tensor_by_name(...)` /
    `as_graph_element(...)`: a string literal ('losses/total_loss_ref:0'), or a %-format of one
    ('IoU_Metrics/iou_score_ths_%s_ref:0' % threshold) as a regular expression. UNet_Industrial_ID0007's
    ProfilerHook fetches its losses, metrics and samples so in before_run; on Ascend model_fn's graph is fetchable
    as written, so they are carried out of the device loop as the loss is."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(hook_class)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return ()
    patterns = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
                and node.func.attr in ("get_tensor_by_name", "as_graph_element")):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            patterns.append(re.escape(arg.value))
        elif (isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod) and isinstance(arg.left, ast.Constant)
              and isinstance(arg.left.value, str)):
            pieces = re.split(r"%[-+ #0-9.]*[sdifr]", arg.left.value)
            patterns.append("[^/]*".join(re.escape(piece) for piece in pieces))
    return tuple(dict.fromkeys(patterns))


def _by_hook_names(graph, patterns) -> list:
    """The tensors of the loop body being built whose names (model_fn's, without the loop's scope) match."""
    if not patterns:
        return []
    wanted = re.compile("|".join(f"(?:{p if p.rpartition(':')[1] else p + ':0'})" for p in patterns))
    found = []
    for op in graph.get_operations():
        if not is_inner(op, graph) or _LOOP_SCOPE.sub("", op.name).startswith("npurun_"):
            continue
        for tensor in op.outputs:
            if wanted.fullmatch(_LOOP_SCOPE.sub("", tensor.name)) and tensor.dtype != tf.resource:
                found.append(tensor)
                if len(found) >= _MAX_HOOK_NAMED:
                    return found
    return found


def named_scalars_in_body(graph_before: set) -> list:
    """Scalars model_fn made at its top level, those it named with tf.identity first (`tf.identity(loss,
    name='loss')`, 'learning_rate', 'cross_entropy'): scripts name tensors so to fetch them by name from their hooks
    ('loss:0' in a before_run), which on Ascend fetches the last step's value. `graph_before`: the
    names of the ops that existed before model_fn ran. The adapter's loss-scale flag
    ('apply_grads/overflow_status_reduce_all', a bool) is kept in whatever name scope it is."""
    graph = tf.compat.v1.get_default_graph()
    scope = graph.get_name_scope()
    prefix = f"{scope}/" if scope else ""
    found, others = [], []
    for op in graph.get_operations():
        if op.name in graph_before or not op.name.startswith(prefix) or op.type in _NOT_NAMED_VALUES:
            continue
        if not op.outputs or op.outputs[0].shape.rank != 0:
            continue
        if op.type == "Identity" and op.name.rpartition("/")[2] == _OVERFLOW_STATUS and op.outputs[0].dtype == tf.bool:
            found.append(op.outputs[0])
            continue
        if "/" in op.name[len(prefix):]:
            continue
        if op.outputs[0].dtype.is_floating or op.outputs[0].dtype.is_integer:
            # Other top-level scalars too: `tf.losses.get_total_loss()` is the AddN 'total_loss', and the
            # `tf.identity(total_loss, name='total_loss')` after it is 'total_loss_1' (32 folders), so a
            # hook's 'total_loss:0' (41 folders) is the AddN, on Ascend as here. Identities come first.
            (found if op.type == "Identity" else others).append(op.outputs[0])
    return (found + others)[:_MAX_NAMED]


def _in_body(graph, name):
    """The tensor model_fn named `name` in the loop body being built: a function graph of its own (control
    flow v2) has it as named; in control flow v1 (TF 1 scripts) it is under the loop's name scope."""
    scope = graph.get_name_scope()
    for candidate in (name, f"{scope}/{name}" if scope else None):
        if candidate is None:
            continue
        try:
            return graph.as_graph_element(candidate)
        except (KeyError, ValueError):
            continue
    return None


class InnerFetches:
    """Translates what hooks hold and fetch (module doc).

    `known`: (inner tensor, outer tensor holding its host-side value) pairs; `where` completes
    "model_fn built ... " in messages.
    """

    def __init__(self, graph, known: list, where: str):
        self.graph = graph
        self.known = {_key(k): v for k, v in known}
        # by the name model_fn gave each (without the loop's name scope control flow v1 puts in front)
        self.known_names = {_LOOP_SCOPE.sub("", k.name): v for k, v in known if isinstance(k, tf.Tensor)}
        self._inner_graphs = {k.graph for k, _ in known if isinstance(k, tf.Tensor)} - {graph}
        self.where = where
        self.held = []  # (hook, inner tensor or op it holds that has no host-side value)
        self._cache = {}

    def adopt(self, hooks) -> None:
        """Before the hooks' begin(): in the attributes of each hook, replace the known inner
        tensors (LoggingTensorHook's tensors, NanTensorHook's loss) by their host-side tensors, and
        LoggingTensorHook's names of them ('learning_rate', 'loss/total_loss') too.
        Other inner tensors are left alone (a hook may hold one without fetching it) and noted
        for `explain_begin_failure`."""
        for hook in hooks:
            for name, value in list(getattr(hook, "__dict__", {}).items()):
                if not isinstance(value, (tf.Tensor, tf.Operation, dict, list, tuple)):
                    continue
                if name == "_tensors" and isinstance(hook, tf.compat.v1.train.LoggingTensorHook) and any(
                        isinstance(leaf, str) and self._known_name(leaf) is not None for leaf in tf.nest.flatten(value)):
                    value = tf.nest.map_structure(self._known_name_or_same, value)
                    setattr(hook, name, value)  # names of loop tensors -> their host-side values
                try:
                    leaves = tf.nest.flatten(value)
                except (TypeError, ValueError):
                    continue  # not a structure tf.nest understands
                inner = [leaf for leaf in leaves
                         if isinstance(leaf, (tf.Tensor, tf.Operation)) and is_inner(leaf, self.graph)]
                self.held += [(hook, leaf) for leaf in inner if _key(leaf) not in self.known]
                if any(_key(leaf) in self.known for leaf in inner):
                    setattr(hook, name, tf.nest.map_structure(self._known_or_same, value))

    def explain_begin_failure(self, error: Exception) -> None:
        """Raise InnerTensorError (from `error`) when a hook whose begin() failed holds inner
        tensors: resolving them in begin() is what fails."""
        if self.held:
            hook, element = self.held[0]
            raise self._error(hook, element) from error

    def translate(self, hook, fetches):
        """`fetches` of `hook` with known inner tensors replaced; InnerTensorError for others."""
        leaves = tf.nest.flatten(fetches)
        key = (id(fetches), tuple(map(id, leaves)))
        entry = self._cache.get(key)
        if entry is not None and entry[0] is fetches:
            return entry[1]
        translated = tf.nest.map_structure(lambda f: self._one(hook, f), fetches)
        if len(self._cache) >= _MAX_CACHED:
            self._cache.clear()
        self._cache[key] = (fetches, translated)
        return translated

    def _known_or_same(self, element):
        if isinstance(element, (tf.Tensor, tf.Operation)):
            return self.known.get(_key(element), element)
        return element

    def _one(self, hook, fetch):
        element = fetch
        if isinstance(fetch, str):
            try:
                element = self.graph.as_graph_element(fetch)
            except (KeyError, ValueError):
                return self._by_name_in_loop(hook, fetch)
            value = variable_value(element)
            if value is not element:  # 'global_step:0': the step, as in TensorFlow 1.15
                return value
        if isinstance(element, (tf.Tensor, tf.Operation)) and is_inner(element, self.graph):
            known = self.known.get(_key(element))
            if known is None:
                raise self._error(hook, element)
            return known
        return fetch

    def _by_name_in_loop(self, hook, fetch: str):
        """A fetch by the name model_fn gave a tensor ('loss/total_loss:0', as BERT-style hooks fetch it): on
        Ascend the graph is model_fn's as written; here model_fn's tensors are in the loop body (a function graph
        of its own, or under the loop's name scope). The
        loss gets its host-side value; another tensor of the loop, InnerTensorError; else Session.run reports it."""
        known = self._known_name(fetch)
        if known is not None:
            return known
        name = fetch if ":" in fetch else f"{fetch}:0"
        op_name = name.rpartition(":")[0]
        for op in self.graph.get_operations():  # control flow v1: the body's ops are in this graph
            if (op.name == op_name or op.name.endswith("/" + op_name)) and is_inner(op, self.graph):
                raise self._error(hook, op)
        for graph in self._inner_graphs:  # control flow v2: the body is a function graph of its own
            try:
                element = graph.as_graph_element(name)
            except (KeyError, ValueError):
                continue
            raise self._error(hook, element)
        return fetch

    def _known_name_or_same(self, leaf):
        known = self._known_name(leaf)
        return leaf if known is None else known

    def _known_name(self, fetch):
        """The host-side value of the known loop tensor `fetch` names (as model_fn named it), else None."""
        if not isinstance(fetch, str):
            return None
        name = fetch if ":" in fetch else f"{fetch}:0"
        return self.known_names.get(name)

    def _error(self, hook, element) -> InnerTensorError:
        return InnerTensorError(
            f"{type(hook).__name__} fetches {element.name}, which model_fn built {self.where}; such tensors "
            f"cannot be fetched from the host. Fetch the loss (npurun gives its last value), pass the tensor "
            f"through NPUEstimatorSpec(host_call=...) or a tf.compat.v1.summary, or train with "
            f"iterations_per_loop=1 and jit_compile='false'")


# Ops a value computed from constants alone may be made of (no state, no input, no loop or device op).
_NOT_CONSTANT = frozenset({"Enter", "RefEnter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond",
                           "Placeholder", "PlaceholderWithDefault", "IteratorGetNext"})
_MAX_CONSTANT_OPS = 10000


def constant_subgraph(tensor) -> Optional[list]:
    """The ops `tensor` is computed from when they all depend on constants only (its leaves are Const ops; no
    variable, input, random or loop op among them), in a topological order; else None. Control inputs do not
    count: a constant in a while-loop body has one on the loop's pivot."""
    order, seen, stack = [], set(), [(tensor.op, False)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _NOT_CONSTANT or op.op_def.is_stateful or len(seen) > _MAX_CONSTANT_OPS:
            return None
        if not op.inputs and op.type != "Const":
            return None
        stack.append((op, True))
        stack += [(t.op, False) for t in op.inputs if t.op.name not in seen]
    return order


def constant_value(tensor):
    """Evaluate `tensor`, whose ops `constant_subgraph` returned, in a graph and session of its own (the
    training graph is finalized, and the tensor sits in a loop body the host cannot fetch from)."""
    ops = constant_subgraph(tensor)
    graph_def = tf.compat.v1.GraphDef()
    for op in ops:
        node = graph_def.node.add()
        node.CopyFrom(op.node_def)
        node.ClearField("device")
        kept = [name for name in node.input if not name.startswith("^")]
        del node.input[:]
        node.input.extend(kept)
        for attribute in ("_class", "_xla_compile_id"):
            if attribute in node.attr:
                del node.attr[attribute]
    with tf.Graph().as_default() as graph:
        tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run(tensor.name)


class HostSession(_SessionInterface):
    """The session hooks get in after_create_session and end (before the first and after the last loop run):
    a fetch of a tensor model_fn computed from constants alone inside the loop (NVIDIA's UNet scripts log
    the trainable parameter count so, 'trainable_parameters_count_ref:0') gets its value, as on Ascend, where
    model_fn's graph is fetchable as written; another tensor of the loop raises InnerTensorError naming the
    hook; the rest is the session's. A SessionInterface, as Saver.save (a hook's end saving) requires."""

    def __init__(self, session, inner: "InnerFetches", hook):
        self._session, self._inner, self._hook = session, inner, hook

    def __getattr__(self, name):
        return getattr(self._session, name)

    @property
    def graph(self):
        return self._session.graph

    @property
    def sess_str(self):
        return self._session.sess_str

    def partial_run_setup(self, *args, **kwargs):
        return self._session.partial_run_setup(*args, **kwargs)

    def partial_run(self, *args, **kwargs):
        return self._session.partial_run(*args, **kwargs)

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        computed = {}

        def one(fetch):
            element = fetch
            if isinstance(fetch, str):
                try:
                    element = self._inner.graph.as_graph_element(fetch)
                except (KeyError, ValueError):
                    return fetch  # the session reports it
            if isinstance(element, tf.Tensor) and is_inner(element, self._inner.graph):
                if constant_subgraph(element) is None:
                    raise self._inner._error(self._hook, element)
                computed[len(computed)] = constant_value(element)
                return _Computed(len(computed) - 1)
            return fetch

        translated = tf.nest.map_structure(one, fetches)
        if not computed:
            return self._session.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)
        rest = [leaf for leaf in tf.nest.flatten(translated) if not isinstance(leaf, _Computed)]
        values = iter(self._session.run(rest, feed_dict=feed_dict, options=options, run_metadata=run_metadata)
                      if rest else [])
        return tf.nest.map_structure(
            lambda leaf: computed[leaf.index] if isinstance(leaf, _Computed) else next(values), translated)


class _Computed:
    def __init__(self, index):
        self.index = index


def _key(element) -> Optional[object]:
    return element.ref() if isinstance(element, tf.Tensor) else element
