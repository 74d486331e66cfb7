"""Tiny graphs with known values, and a runner that executes a plan's hooks like the Estimator.

The model: x (2x2 constant) @ w (2x1 variable) -> "matmul"; loss = sum(matmul^2); plain gradient
descent with learning rate LR, so the weights of every step are known in closed form
(`reference_weights`).
"""
from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from npurun.runtime.contributors import build_plan

X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
W0 = np.array([[0.5], [-1.0]], np.float32)
LR = np.float32(0.01)


def reference_weights(steps: int) -> list[np.ndarray]:
    """w before each step 0..steps (float32 arithmetic, as TensorFlow does it)."""
    weights = [W0.copy()]
    for _ in range(steps):
        w = weights[-1]
        grad = np.float32(2.0) * X.T @ (X @ w)
        weights.append((w - LR * grad).astype(np.float32))
    return weights


def linear_model() -> dict:
    """The model above with tf.compat.v1 ops; returns its tensors by name."""
    x = tf.constant(X, name="x")
    w = tf.compat.v1.get_variable("w", initializer=tf.constant(W0))
    y = tf.matmul(x, w, name="matmul")
    loss = tf.reduce_sum(tf.square(y, name="square"), name="loss")
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train = tf.compat.v1.train.GradientDescentOptimizer(LR).minimize(loss, global_step=global_step, name="train")
    return {"x": x, "w": w, "matmul": y, "loss": loss, "train": train, "fetch": [train, loss]}


def looped_model(n: int) -> dict:
    """The same training step run n times per Session.run inside a tf.while_loop (a device loop)."""
    x = tf.constant(X, name="x")
    w = tf.compat.v1.get_variable("w", initializer=tf.constant(W0))
    global_step = tf.compat.v1.train.get_or_create_global_step()

    def body(i):
        y = tf.matmul(x, w.read_value(), name="matmul")
        grad = tf.multiply(2.0, tf.matmul(x, y, transpose_a=True), name="grad")
        update = w.assign_sub(LR * grad, name="update")
        count = global_step.assign_add(1, name="count")
        with tf.control_dependencies([update, count]):
            return i + 1

    loop = tf.while_loop(lambda i: i < n, body, [tf.constant(0)], name="train_loop")
    return {"w": w, "fetch": loop}


class CaptureMetadata(tf.compat.v1.train.SessionRunHook):
    """Keeps a copy of every run's RunMetadata (filled when any hook asks for a trace)."""

    def __init__(self):
        self.metadata = []

    def after_run(self, run_context, run_values):
        copy = tf.compat.v1.RunMetadata()
        copy.CopyFrom(run_values.run_metadata)
        self.metadata.append(copy)


def run_plan(options, build=linear_model, runs: int = 1, mode: str = "train", extra_hooks=(), feeds=None):
    """Build the graph, the plan for `mode`, run the model's fetches `runs` times with the plan's
    hooks in a SingularMonitoredSession (what the Estimator does); returns (plan, model, results)."""
    graph = tf.Graph()
    with graph.as_default():
        model = build()
        plan = build_plan(options, mode)
        for transform in plan.graph_transforms:
            transform(graph, mode)
        hooks = list(plan.hooks) + list(extra_hooks)
        with tf.compat.v1.train.SingularMonitoredSession(hooks=hooks, config=plan.config_proto) as session:
            results = [session.run(model["fetch"], feed_dict=feeds) for _ in range(runs)]
    return plan, model, results


def only_subdir(path) -> str:
    entries = sorted(os.listdir(path))
    assert len(entries) == 1, entries
    return os.path.join(path, entries[0])
