"""XLA control: `jit_compile` and `mix_compile_mode`.

Rules:
  - `jit_compile="false"`: XLA never compiles (the session's global_jit_level is OFF).
  - `jit_compile="true"` with `mix_compile_mode=False` ("full sink", the Ascend default): the whole
    training step is one XLA computation, and with iterations_per_loop > 1 the whole device loop
    is. The Estimator builds the step through `compile_step` (see below). An op XLA cannot compile
    for the device is a ValueError naming the op, its type and the reason, raised by a graph
    transform when the graph is finalised, before anything runs.
  - `jit_compile="true"` with `mix_compile_mode=True` ("mixed"): XLA auto-clustering
    (global_jit_level ON_1; on a CPU, where TensorFlow fixes its auto-clustering policy at the
    first session of a process, a graph transform also marks every op as a compilation candidate,
    see `mark_for_compilation`): XLA compiles the clusters it can and the other ops run in the
    TensorFlow executor. `compile_step` then builds the step plainly.
  - `jit_compile="auto"`: on a GPU as "true"; on a CPU as "false". Why: measured on this project's
    2-core CPU (docs/compilation.md, `bench/compile_cache.py --modes`), XLA adds seconds of
    compilation before the first step and its steady-state step time is within noise of, or worse
    than, TensorFlow's oneDNN kernels; on GPUs XLA's fusion removes kernel launches and memory
    round trips, which is where it pays off.
  - When the session config given by the user sets global_jit_level and jit_compile is "auto",
    the user's setting is kept.

How the Estimator uses it (iterations_per_loop = N; estimator/compiled_step.py, device_loop.py):
  N == 1:  model_fn's step is built by compile_step(options, step_fn, input tensors).
  N > 1 and loop_is_compiled(options): the dataset goes through stack_for_loop (one get_next
           gives N batches) and the Estimator's tf.while_loop over them is built by compile_step.
  N > 1 otherwise: the Estimator's own tf.while_loop with get_next inside; nothing to call here
           (mixed mode clusters the loop body automatically).
`device_loop` below is the same loop for sess.run scripts. `step_fn` builds one training step
(model_fn, optimizer, global_step update) and returns the loss (with the train op as a control
dependency); variables may be created inside it.
"""
from __future__ import annotations

import contextlib
import os
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .plan import Options, SessionPlan

JIT_VALUES = ("auto", "true", "false")
COMPILE_ID_ATTR = "_xla_compile_id"  # set by xla.compile on every op of the compiled computation
# Ops the XLA compiler handles itself, without a registered kernel.
_COMPILER_HANDLED = {"_Arg", "_Retval", "NoOp", "Placeholder", "XlaClusterOutput"}


@dataclass(frozen=True)
class JitChoice:
    """What jit_compile and mix_compile_mode resolve to for this machine.

    mode: "off", "whole" (one XLA computation per step/loop) or "mixed" (auto-clustering).
    device_type: the XLA compilation device ("XLA_CPU_JIT" or "XLA_GPU_JIT").
    reason: one line saying why, for messages.
    """

    mode: str
    device_type: str
    reason: str

    @property
    def compiles(self) -> bool:
        return self.mode != "off"


def has_gpu() -> bool:
    """Whether TensorFlow sees a GPU in this process."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def resolve_jit(options: Options, gpu: bool | None = None) -> JitChoice:
    """The JitChoice for `options` (see module rules); `gpu` overrides device detection."""
    gpu = has_gpu() if gpu is None else gpu
    device_type = "XLA_GPU_JIT" if gpu else "XLA_CPU_JIT"
    value = options.get("jit_compile", "auto")
    if value == "false":
        return JitChoice("off", device_type, "jit_compile='false'")
    if value == "auto" and not gpu:
        return JitChoice("off", device_type, "jit_compile='auto' does not compile on a CPU")
    why = "jit_compile='true'" if value == "true" else "jit_compile='auto' compiles on a GPU"
    if options.get("mix_compile_mode", False):
        return JitChoice("mixed", device_type, why + ", mix_compile_mode=True: auto-clustering")
    return JitChoice("whole", device_type, why + ", mix_compile_mode=False: the whole step is compiled")


def loop_is_compiled(options: Options) -> bool:
    """True when the device loop must be one XLA computation (then its input must be stacked)."""
    return resolve_jit(options).mode == "whole"


# --------------------------------------------------------------------------- building the step

def compile_step(options: Options, fn: Callable[..., Any], inputs: Sequence = ()):
    """Build `fn(*inputs)` into the current graph, as one XLA computation in "whole" mode.

    In "whole" mode the ops `fn` creates are marked for one XLA cluster (xla.compile semantics:
    variables created inside are placed outside it, resource variables are used, summaries inside
    are dropped); the result has `fn`'s structure (a single tensor stays a tensor; an op, or None,
    becomes an op that runs the computation). In the other modes `fn(*inputs)` is called as is.
    """
    if resolve_jit(options).mode != "whole":
        return fn(*inputs)
    from tensorflow.python.compiler.xla import xla
    from tensorflow.python.util import deprecation

    returned = {}

    def computation(*args):
        returned["value"] = fn(*args)
        return returned["value"]

    with deprecation.silence():  # xla.compile is deprecated for eager code; graph mode has no successor
        outputs = xla.compile(computation, list(inputs))
    value = returned.get("value")
    if _is_tensor(value) and isinstance(outputs, (list, tuple)) and len(outputs) == 1:
        return outputs[0]
    return outputs


def _is_tensor(value) -> bool:
    import tensorflow as tf

    return isinstance(value, tf.Tensor)


def stack_for_loop(dataset, iterations: int):
    """`dataset` with `iterations` consecutive elements stacked into one (for `device_loop`)."""
    return dataset.batch(iterations, drop_remainder=True)


def device_loop(step_fn: Callable[[Any], Any], iterations: int, stacked) -> Any:
    """Run `step_fn(element_i)` for i < iterations over the leading axis of `stacked`.

    Returns the per-iteration losses, a float32 tensor of shape [iterations]. Built with
    tf.while_loop and a fixed trip count, so XLA can compile the loop as a whole.
    """
    import tensorflow as tf

    flat = tf.nest.flatten(stacked)

    def body(i, losses):
        element = tf.nest.pack_sequence_as(stacked, [t[i] for t in flat])
        loss = tf.cast(step_fn(element), tf.float32)
        return i + 1, losses.write(i, loss)

    losses = tf.TensorArray(tf.float32, size=iterations)
    _, losses = tf.while_loop(lambda i, _: i < iterations, body, (tf.constant(0), losses),
                              maximum_iterations=iterations)
    return losses.stack()


# --------------------------------------------------------------------------- checking the step

def xla_kernels(device_type: str) -> dict:
    """op type -> [KernelDef] registered for the XLA compilation device `device_type`.

    TensorFlow registers the XLA kernels lazily, when the first session optimises a graph; a
    trivial session is run when none are registered yet.
    """
    from tensorflow.python.framework import kernels

    index = _kernel_index(kernels, device_type)
    if not index:
        _run_trivial_session()
        index = _kernel_index(kernels, device_type)
    return index


def _kernel_index(kernels, device_type: str) -> dict:
    index: dict = {}
    for kernel in kernels.get_all_registered_kernels().kernel:
        if kernel.device_type == device_type:
            index.setdefault(kernel.op, []).append(kernel)
    return index


def _run_trivial_session() -> None:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [])
        y = x + 1.0
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(y, {x: 1.0})


def _attr_types(node_def, name: str) -> list:
    attr = node_def.attr.get(name) if hasattr(node_def.attr, "get") else None
    if attr is None:
        return []
    if attr.HasField("type"):
        return [attr.type]
    return list(attr.list.type)


def _kernel_problem(node_def, index: dict) -> str | None:
    """Why no XLA kernel fits this node (None when one does)."""
    if node_def.op in _COMPILER_HANDLED:
        return None
    candidates = index.get(node_def.op)
    if not candidates:
        return "XLA has no kernel for this op type"
    for kernel in candidates:
        if all(set(_attr_types(node_def, c.name)) <= set(c.allowed_values.list.type) for c in kernel.constraint):
            return None
    import tensorflow as tf

    for constraint in candidates[0].constraint:
        bad = [t for t in _attr_types(node_def, constraint.name) if t not in constraint.allowed_values.list.type]
        if bad:
            names = ", ".join(tf.dtypes.as_dtype(t).name for t in bad)
            return f"XLA's kernel does not accept {constraint.name}={names}"
    return "XLA's kernel does not accept these attributes"


def unsupported_ops(graph, device_type: str) -> list:
    """[(op name, op type, reason)] for every op of an xla.compile cluster in `graph` that XLA cannot
    compile for `device_type`, including ops in loop bodies and other called functions."""
    index = xla_kernels(device_type)
    arg_types = set()
    for kernel in index.get("_Arg", []):
        for constraint in kernel.constraint:
            arg_types |= set(constraint.allowed_values.list.type)
    problems = []
    called = set()
    for op in graph.get_operations():
        cluster = _compile_id(op)
        if cluster is None:
            continue
        reason = _kernel_problem(op.node_def, index)
        if reason is None and arg_types:
            for tensor in op.inputs:
                if _compile_id(tensor.op) != cluster and tensor.dtype.as_datatype_enum not in arg_types:
                    reason = f"its input {tensor.name} has dtype {tensor.dtype.name}, which XLA cannot take in"
                    break
        if reason:
            problems.append((op.name, op.type, reason))
        called |= _called_functions(op.node_def)
    library = {f.signature.name: f for f in graph.as_graph_def().library.function}
    seen = set()
    while called:
        name = called.pop()
        if name in seen or name not in library:
            continue
        seen.add(name)
        for node in library[name].node_def:
            reason = _kernel_problem(node, index)
            if reason:
                problems.append((f"{name}/{node.name}", node.op, reason))
            called |= _called_functions(node)
    return problems


def _compile_id(op):
    try:
        return op.get_attr(COMPILE_ID_ATTR)
    except ValueError:
        return None


def _called_functions(node_def) -> set:
    names = set()
    for attr in node_def.attr.values():
        if attr.HasField("func"):
            names.add(attr.func.name)
        names.update(f.name for f in attr.list.func)
    return names


def whole_step_check(device_type: str) -> Callable:
    """A graph transform: raise ValueError when the compiled step holds an op XLA cannot compile;
    warn when no op was built through `compile_step` in train mode (nothing would be compiled)."""

    def check(graph, mode: str) -> None:
        if not any(_compile_id(op) is not None for op in graph.get_operations()):
            if mode == "train":
                warnings.warn("npurun: jit_compile asks for whole-step XLA compilation, but the training step "
                              "was not built through npurun.runtime.compilation.compile_step; it runs "
                              "without XLA", UserWarning, stacklevel=2)
            return
        problems = unsupported_ops(graph, device_type)
        if problems:
            lines = "\n".join(f"  {name} ({op_type}): {reason}" for name, op_type, reason in problems[:20])
            more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
            raise ValueError(
                f"mix_compile_mode=False: the whole training step must compile with XLA ({device_type}), "
                f"but {len(problems)} op(s) cannot:\n{lines}{more}\nSet mix_compile_mode=True to run such ops "
                f"in TensorFlow and compile the rest, or jit_compile='false' to not use XLA.")

    return check


def mark_for_compilation(graph, mode: str) -> None:
    """A graph transform: mark every op as an XLA candidate (`_XlaCompile`, one `_XlaScope`).

    Why not only global_jit_level: TensorFlow fixes the CPU's auto-clustering policy when it first
    registers the XLA CPU device (the first session of the process), from tf_xla_cpu_global_jit;
    after that ON_1 never clusters CPU ops. Explicit marks are honoured at any time, and the
    clustering pass still leaves out the ops XLA cannot compile, which run in TensorFlow.
    """
    from tensorflow.core.framework import attr_value_pb2

    compile_attr = attr_value_pb2.AttrValue(b=True)
    scope_attr = attr_value_pb2.AttrValue(s=b"npurun_mixed")
    for op in graph.get_operations():
        op._set_attr("_XlaCompile", compile_attr)  # before finalize, as jit_scope would at creation
        op._set_attr("_XlaScope", scope_attr)


# --------------------------------------------------------------------------- errors at run time

_XLA_FAILURE_MARKS = ("tf2xla conversion failed", "must be a compile-time constant", "XLA compilation")
_NODE_IN_MESSAGE = re.compile(r"node `([^`]+)` with op|\{\{node ([^}]+)\}\}")


@contextlib.contextmanager
def explained_compile_errors(options: Options, graph):
    """In whole mode, re-raise an XLA compilation failure (XLA compiles at the first run, and again
    for each new input shape) with what the user needs: the jit options that asked for it, the op
    and where the user's code created it (also inside a compiled loop's body), and the ways out. The error keeps its TensorFlow type and the
    original as __cause__. Mixed mode leaves what it cannot compile to TensorFlow, so its rare
    compile errors pass unchanged."""
    import tensorflow as tf

    choice = resolve_jit(options)
    try:
        yield
    except tf.errors.InvalidArgumentError as error:
        message = error.message or ""
        if choice.mode != "whole" or not any(mark in message for mark in _XLA_FAILURE_MARKS):
            raise
        match = _NODE_IN_MESSAGE.search(message)
        name = next((g for g in match.groups() if g), None) if match else None
        where = _created_at(graph, name) if name else None
        first = message.strip().splitlines()[0]
        lines = [f"XLA could not compile the training step ({choice.reason}): {first}"]
        if name:
            lines.append(f"  op: {name}" + (f", created at {where}" if where else ""))
        lines.append("Set mix_compile_mode=True to run such ops in TensorFlow and compile the rest, or "
                     "jit_compile='false' to not use XLA.")
        raise type(error)(error.node_def, error.op, "\n".join(lines)) from error


def _created_at(graph, name: str):
    """file:line of the frame of user code (outside TensorFlow and npurun) that created op `name`."""
    op = _find_op(graph, name)
    if op is None:
        return None
    libraries = _library_dirs()
    for frame in reversed(op.traceback or []):
        path = os.path.abspath(frame.filename)
        if not any(path.startswith(directory) for directory in libraries):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return None


def _find_op(graph, name: str, depth: int = 0):
    """Op `name` of `graph` or of a function graph it holds (a while loop's body, ...)."""
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        pass
    if depth > 3:
        return None
    for function in list(getattr(graph, "_functions", {}).values()):
        body = getattr(function, "graph", None)
        found = _find_op(body, name, depth + 1) if body is not None and body is not graph else None
        if found is not None:
            return found
    return None


def _library_dirs() -> tuple:
    """The installed directories of TensorFlow, npurun and Python's standard library."""
    import sysconfig

    import tensorflow as tf

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return tuple(os.path.join(os.path.abspath(d), "") for d in
                 (os.path.dirname(tf.__file__), here, sysconfig.get_paths()["stdlib"]))


# --------------------------------------------------------------------------- the plan

def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    """Set the session's JIT level and, in whole mode, the compilability check (module rules)."""
    import tensorflow as tf

    choice = resolve_jit(options)
    optimizer_options = plan.config_proto.graph_options.optimizer_options
    levels = tf.compat.v1.OptimizerOptions
    user_chose = optimizer_options.global_jit_level != levels.DEFAULT
    if not (user_chose and options.get("jit_compile", "auto") == "auto"):
        # "whole" compiles only what compile_step marked; auto-clustering on top would split it.
        optimizer_options.global_jit_level = levels.ON_1 if choice.mode == "mixed" else levels.OFF
    if choice.mode == "mixed" and choice.device_type == "XLA_CPU_JIT":
        plan.graph_transforms.append(mark_for_compilation)
    if choice.mode == "whole":
        plan.graph_transforms.append(whole_step_check(choice.device_type))
