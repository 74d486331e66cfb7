"""dynamic_graph_execute_mode='dynamic_execute' with whole-step XLA: one compilation for a range.

A ranged input (`lo~hi` dimensions) that feeds an XLA computation is padded with zeros to its
upper bounds outside the computation, and inside it each padded dimension becomes an XLA bounded
dynamic dimension (`XlaSetDynamicDimensionSize`), so every shape of the range runs one
executable. The rules, and where this is applied, are in dynamic_inputs.py.
"""
from __future__ import annotations

import re
import warnings

from ..config import parsers


def compiled_consumers(tensor) -> dict:
    """XLA computation id -> [(op, input index)] for the ops of xla.compile computations reading
    `tensor` (ops outside any computation are left out)."""
    from .compilation import COMPILE_ID_ATTR

    found: dict = {}
    for consumer in tensor.consumers():
        try:
            cluster = consumer.get_attr(COMPILE_ID_ATTR)
        except ValueError:
            continue
        for i, source in enumerate(consumer.inputs):
            if source is tensor:
                found.setdefault(cluster, []).append((consumer, i))
    return found


def bound_for_xla(graph, tensor, shape: parsers.Shape, where: str) -> list:
    """Make the XLA computations reading `tensor` take it at its upper bounds (module rules).

    Outside the computations `tensor` is padded with zeros to the upper bound of every `lo~hi`
    dimension whose static size is unknown; inside each one, `XlaSetDynamicDimensionSize` gives the
    padded dimensions their real size back as XLA bounded dynamic dimensions, and the computation's
    ops read that instead of `tensor`. A tensor of rank len(shape) + 1 is a device loop's stacked
    input: its leading dimension (the iterations) is left alone. Returns the padded dimensions
    (of `tensor`); [] when no XLA computation reads it or nothing needs padding.
    """
    import tensorflow as tf
    from tensorflow.compiler.tf2xla.ops import gen_xla_ops
    from tensorflow.core.framework import attr_value_pb2

    from .compilation import COMPILE_ID_ATTR

    clusters = compiled_consumers(tensor)
    if not clusters:
        return []
    rank = tensor.shape.rank
    if rank is None or rank - len(shape) not in (0, 1):
        raise ValueError(f"{where} has shape {tensor.shape} and feeds an XLA computation; its range "
                         f"[{','.join(map(str, shape))}] needs an input of rank {len(shape)}")
    offset = rank - len(shape)
    static = tensor.shape.as_list()
    padded, unbounded = [], []
    for d, allowed in enumerate(shape):
        if static[d + offset] is not None:
            continue
        if allowed.hi is None:
            unbounded.append(d)
        else:
            padded.append(d + offset)
    if unbounded:
        warnings.warn(f"dynamic_graph_execute_mode='dynamic_execute': {where}, dimension(s) "
                      f"{', '.join(map(str, unbounded))} have no upper bound (-1) in dynamic_inputs_shape_range, "
                      f"so XLA compiles one executable per distinct size of them", UserWarning, stacklevel=2)
    if not padded:
        return []
    bounds = {d + offset: allowed.hi for d, allowed in enumerate(shape)}
    with tf.name_scope(_scope_name(where)):
        sizes = tf.shape(tensor, out_type=tf.int32)
        real = {d: sizes[d] for d in padded}
        paddings = tf.stack([tf.stack([0, bounds[d] - real[d]]) if d in real else tf.constant([0, 0])
                             for d in range(rank)])
        bounded = tf.pad(tensor, paddings)
        bounded.set_shape([bounds[d] if d in real else static[d] for d in range(rank)])
        for cluster, readers in clusters.items():
            mark = attr_value_pb2.AttrValue(s=cluster)
            inside = bounded
            for d in padded:
                dim = tf.constant(d, tf.int32)
                inside = gen_xla_ops.xla_set_dynamic_dimension_size(inside, dim, real[d])
                for op in (dim.op, inside.op):
                    op._set_attr(COMPILE_ID_ATTR, mark)  # inside the computation, as xla.compile marks its ops
            for op, i in readers:
                op._update_input(i, inside)  # graph surgery before the graph is finalised
    return padded


def negative_index_slices(graph, clusters) -> list:
    """Names of the StridedSlice ops of the XLA computations `clusters` (compile ids), and of the
    functions they call, that index a dimension of unknown static size with a constant negative
    begin (`x[-1]`, `x[-3:]`).

    Why: under a bounded dynamic dimension tf2xla counts such an index from the bound, so it reads
    the padding instead of the last real elements (measured on TensorFlow 2.21; a negative *end*,
    `x[:-1]`, is right). Ellipsis and new-axis slices are not analysed.
    """
    from tensorflow.python.framework import tensor_util

    from .compilation import COMPILE_ID_ATTR

    found: list = []
    roots = []
    for op in graph.get_operations():
        try:
            if op.get_attr(COMPILE_ID_ATTR) in clusters:
                roots.append(op)
        except ValueError:
            continue
    seen: set = set()

    def scan(ops, prefix: str) -> None:
        for op in ops:
            if op.type == "StridedSlice" and _indexes_from_end(op, tensor_util):
                found.append(prefix + op.name)
            for name in _called(op):
                if name in seen:
                    continue
                seen.add(name)
                function = graph._get_function(name)  # the FuncGraph behind a while loop, cond, call
                body = getattr(function, "graph", None) if function is not None else None
                if body is not None:
                    scan(body.get_operations(), f"{prefix}{name}/")

    scan(roots, "")
    return found


def _indexes_from_end(op, tensor_util) -> bool:
    if op.get_attr("ellipsis_mask") or op.get_attr("new_axis_mask"):
        return False
    begin = tensor_util.constant_value(op.inputs[1])
    shape = op.inputs[0].shape
    if begin is None or shape.rank is None:
        return False
    begin_mask = op.get_attr("begin_mask")
    return any(b < 0 and not begin_mask & (1 << axis) and axis < shape.rank and shape[axis] is None
               for axis, b in enumerate(begin.tolist()))


def _called(op) -> list:
    names = []
    for value in op.node_def.attr.values():
        if value.HasField("func"):
            names.append(value.func.name)
        names += [f.name for f in value.list.func]
    return names


def _scope_name(where: str) -> str:
    return "dynamic_input_bound_" + re.sub(r"[^A-Za-z0-9_.]+", "_", where.split(": ", 1)[-1]).strip("_")


