"""Dumping the graph TensorFlow executed, for runs under a grappler precision rewrite.

Why: the precision modes rewrite the graph inside the session (grappler's auto mixed precision
turns a MatMul into a float16 MatMul and adds Cast nodes around it). Fetching a tensor by its
Python name would keep grappler from converting its op, so a fetch-based dump shows float32
values that the training run never computed. Here the values come from TensorFlow's debug
watches instead, which the runtime inserts after grappler, into the graph that really runs.

Mechanism (rules):
- `run_options()` asks for a DebugIdentity watch on every output of every executed node (the
  wildcard watch "*"; TensorFlow applies it only next to at least one explicit watch, so one is
  added), written as tfdbg event files into a temporary directory, and for the partition graphs.
- `records()` reads those files back: one record per output slot (and, for dump_mode "input" /
  "all", per input slot: the producer's output) of the nodes that come from the selected ops.
  A node grappler added keeps its origin in `original_op` ("x-0-CastToFp16-0-AutoMixedPrecision"
  comes from "x"); records are in the Python graph's topological order, a cast right after the op
  it comes from, so `dump compare` reads them in graph order.
- Dtypes are those of the executed tensors (float16 / bfloat16 where the rewrite converted).
- A node that runs several times in one step (a v1 while loop) keeps the value of its last run.
  The ops of a device loop run inside a function body, where no watch reaches: as with fetched
  dumps, only the loop's inputs and results are dumped.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile

import tensorflow as tf

from .compare import cast_origin

_v1 = tf.compat.v1
_COPY = re.compile(r"^__copy_(?P<node>.+)_(?P<slot>\d+)$")
_RUNTIME_OPS = ("_Send", "_Recv", "_HostSend", "_HostRecv", "_Retval", "_Arg", "NoOp")


def rewrites_precision(config_proto) -> bool:
    """Whether a session with this ConfigProto runs a grappler precision rewrite."""
    from tensorflow.core.protobuf import rewriter_config_pb2

    on = rewriter_config_pb2.RewriterConfig.ON
    rewrite = config_proto.graph_options.rewrite_options
    return any(getattr(rewrite, name, 0) == on for name in
               ("auto_mixed_precision", "auto_mixed_precision_cpu", "auto_mixed_precision_onednn_bfloat16",
                "auto_mixed_precision_mkl"))


def original_op(node_name: str) -> str:
    """The op a node comes from: itself, or the op whose tensor a grappler precision cast converts."""
    origin = cast_origin(node_name)
    return origin[0] if origin else node_name


class ExecutedCapture:
    """One dumped run: its RunOptions, then its records."""

    def __init__(self, ops, layer, dump_mode: str, graph=None):
        # Graph order: creation order, which is topological (the partition graphs hold what ran).
        every = graph.get_operations() if graph is not None else ops
        self._order = {op.name: index for index, op in enumerate(every)}
        self._layer, self._mode = layer, dump_mode
        self._dir = tempfile.mkdtemp(prefix="npurun-debug-watch-")
        self._anchor = next((op.name for op in ops if op.outputs), None)

    def run_options(self):
        options = _v1.RunOptions(output_partition_graphs=True)
        url = "file://" + self._dir
        for node, slot in (("*", -1), (self._anchor, 0)):
            if node is None:
                continue
            watch = options.debug_options.debug_tensor_watch_opts.add(node_name=node, output_slot=slot)
            watch.debug_ops.append("DebugIdentity")
            watch.debug_urls.append(url)
            watch.tolerate_debug_op_creation_failures = True
        return options

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def _values(self) -> dict:
        """tensor name ("node:slot") -> the value of its last execution."""
        found = []
        for root, _, files in os.walk(self._dir):
            for name in files:
                if "_DebugIdentity_" not in name:
                    continue
                with open(os.path.join(root, name), "rb") as handle:
                    event = _v1.Event.FromString(handle.read())
                for value in event.summary.value:
                    node, slot, _ = value.node_name.rsplit(":", 2)
                    found.append((event.wall_time, name, f"{node}:{slot}", value.tensor))
        values = {}
        for _, _, tensor_name, proto in sorted(found, key=lambda item: (item[0], item[1])):
            values[tensor_name] = proto
        arrays = {}
        for name, proto in values.items():
            if proto.dtype in (tf.resource.as_datatype_enum, tf.variant.as_datatype_enum):
                continue  # handles, not values
            arrays[name] = tf.make_ndarray(proto)
        return arrays

    def records(self, run_metadata) -> list[dict]:
        values = self._values()
        nodes = {}
        for graph in run_metadata.partition_graphs:
            for node in graph.node:
                if node.op in _RUNTIME_OPS or node.name.startswith(("__copy_", "__dbg_")):
                    continue
                nodes[node.name] = node
        chosen = []
        for name, node in nodes.items():
            origin = original_op(name)
            if origin not in self._order or (self._layer is not None and origin not in self._layer):
                continue
            chosen.append(((self._order[origin], name != origin, name), node, origin))
        records = []
        for _, node, origin in sorted(chosen, key=lambda item: item[0]):
            if self._mode in ("input", "all"):
                inputs = [i for i in node.input if not i.startswith("^")]
                for slot, tensor_name in enumerate(inputs):
                    tensor_name = _producer(tensor_name)
                    if tensor_name in values:
                        records.append(dict(op=node.name, op_type=node.op, io="input", slot=slot, tensor=tensor_name,
                                            value=values[tensor_name], original_op=origin))
            if self._mode in ("output", "all"):
                slot = 0
                while f"{node.name}:{slot}" in values:
                    tensor_name = f"{node.name}:{slot}"
                    records.append(dict(op=node.name, op_type=node.op, io="output", slot=slot, tensor=tensor_name,
                                        value=values[tensor_name], original_op=origin))
                    slot += 1
        return records


def _producer(input_name: str) -> str:
    """A NodeDef input ("x", "x:1", "__copy_x_0") as the tensor name of the producer's output."""
    node, _, slot = input_name.partition(":")
    copy = _COPY.match(node)
    if copy:
        return f"{copy.group('node')}:{copy.group('slot')}"
    return f"{node}:{slot or 0}"
