"""Shared test helpers: a small training graph, and what actually ran when a plan executed it."""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from npurun import NPURunConfig
from npurun.runtime.contributors import build_plan

v1 = tf.compat.v1
LOW = {tf.float16.as_datatype_enum: "float16", tf.bfloat16.as_datatype_enum: "bfloat16"}
FLOAT32 = tf.float32.as_datatype_enum


def mlp_train_op(width: int = 256, batch: int = 128, depth: int = 2):
    """A training step of a `depth`-layer MLP on random data, with an Exp and a Softmax in the loss."""
    x = tf.random.normal([batch, width], seed=1)
    labels = tf.random.uniform([batch], 0, 10, dtype=tf.int32, seed=2)
    hidden = x
    for layer in range(depth):
        w = v1.get_variable(f"w{layer}", [width, width], initializer=v1.glorot_uniform_initializer(seed=layer))
        b = v1.get_variable(f"b{layer}", [width], initializer=v1.zeros_initializer())
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(hidden, w), b))
    w_out = v1.get_variable("w_out", [width, 10], initializer=v1.glorot_uniform_initializer(seed=9))
    logits = tf.matmul(hidden, w_out)
    probs = tf.nn.softmax(logits)
    loss = -tf.reduce_mean(tf.reduce_sum(tf.one_hot(labels, 10) * tf.math.log(probs + 1e-6), axis=1))
    loss += 1e-3 * tf.reduce_mean(tf.exp(logits * 0.01))
    return v1.train.GradientDescentOptimizer(0.01).minimize(loss)


def executed_nodes(config: NPURunConfig, build=mlp_train_op, mode: str = "train"):
    """Run `build()`'s op once in a session made from the config's plan; the executed NodeDefs."""
    plan = build_plan(config.options, mode)
    graph = tf.Graph()
    with graph.as_default():
        fetch = build()
        init = v1.global_variables_initializer()
    for transform in plan.graph_transforms:
        transform(graph, mode)
    metadata = v1.RunMetadata()
    with plan.environment():
        with v1.Session(graph=graph, config=plan.config_proto) as session:
            session.run(init)
            session.run(fetch, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    return [node for partition in metadata.partition_graphs for node in partition.node]


def base_op(op: str) -> str:
    """The TensorFlow op a (possibly rewritten/fused) executed op computes: _MklNativeFusedMatMul -> MatMul."""
    for prefix in ("_MklNative", "_Mkl", "_Fused"):
        if op.startswith(prefix):
            op = op[len(prefix):]
    return op.replace("Fused", "")


def dtypes_of(nodes, op: str) -> set:
    """The T dtypes ("float32", "float16", "bfloat16") of the executed nodes computing `op`."""
    found = set()
    for node in nodes:
        if base_op(node.op) == op and "T" in node.attr:
            value = node.attr["T"].type
            found.add(LOW.get(value, "float32" if value == FLOAT32 else tf.as_dtype(value).name))
    assert found, f"no executed {op} node; executed ops: {sorted({n.op for n in nodes})}"
    return found


def low_precision_nodes(nodes) -> list:
    """Names of executed nodes with any float16/bfloat16 type attribute."""
    names = []
    for node in nodes:
        for value in node.attr.values():
            if value.type in LOW or any(t in LOW for t in value.list.type):
                names.append(node.name)
                break
    return names


def write(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)
