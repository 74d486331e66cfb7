"""What XLA cannot compile here, and saying so: in whole-step mode (`jit_compile` with
`mix_compile_mode=False`) a graph transform finds, before anything runs, every op of the compiled step
that has no XLA kernel for the device (`whole_step_check`), and a failure XLA reports at run time is
re-raised naming the op and where the user's code created it (`explained_compile_errors`).
`compilation.py` decides whether and how the step is compiled.
"""
from __future__ import annotations

import contextlib
import os
import re
import warnings
from typing import Callable

from .plan import Options

COMPILE_ID_ATTR = "_xla_compile_id"  # set by xla.compile on every op of the compiled computation
# Ops the XLA compiler handles itself, without a registered kernel.
_COMPILER_HANDLED = {"_Arg", "_Retval", "NoOp", "Placeholder", "XlaClusterOutput"}


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


# --------------------------------------------------------------------------- errors at run time

_XLA_FAILURE_MARKS = ("tf2xla conversion failed", "must be a compile-time constant", "XLA compilation")
_NODE_IN_MESSAGE = re.compile(r"node `([^`]+)` with op|\{\{node ([^}]+)\}\}")


@contextlib.contextmanager
def explained_compile_errors(choice, graph):
    """In whole mode, re-raise an XLA compilation failure (XLA compiles at the first run, and again
    for each new input shape) with what the user needs: the jit options that asked for it, the op
    and where the user's code created it (also inside a compiled loop's body), and the ways out. The error keeps its TensorFlow type and the
    original as __cause__. Mixed mode leaves what it cannot compile to TensorFlow, so its rare
    compile errors pass unchanged. `choice`: the step's `compilation.JitChoice` (this module does not
    import compilation, which imports it)."""
    import tensorflow as tf

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
