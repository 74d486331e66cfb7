"""Small models and session plumbing shared by the runtime tests.

Sessions are built the way the Estimator builds them: `build_plan(NPURunConfig(...).options,
mode)`, graph built inside `plan.environment()`, `plan.graph_transforms` applied, the session
created from `plan.config_proto`.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import tensorflow as tf

from npurun import NPURunConfig
from npurun.runtime import compilation
from npurun.runtime.contributors import build_plan

v1 = tf.compat.v1
XLA_OPS = {"XlaLaunch", "_XlaCompile", "_XlaRun"}


def options(**kwargs):
    """NPURunConfig(**kwargs).options, construction warnings silenced (tests check their own)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NPURunConfig(**kwargs).options


def dense(x, units, name, activation=True):
    w = v1.get_variable(name + "/w", [x.shape[-1], units], initializer=v1.glorot_uniform_initializer(seed=1))
    b = v1.get_variable(name + "/b", [units], initializer=v1.constant_initializer(0.1))
    y = tf.nn.bias_add(tf.matmul(x, w), b)
    return tf.nn.relu(y) if activation else y


def mlp_step(features, labels):
    """One training step of a small MLP; returns the loss with the update as a dependency."""
    hidden = dense(features, 32, "hidden")
    logits = dense(hidden, 4, "logits", activation=False)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = v1.train.get_or_create_global_step()
    update = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    with tf.control_dependencies([update]):
        return tf.identity(loss)


def batch(n=16, features=8, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, features).astype(np.float32), rng.randint(0, 4, n).astype(np.int32)


class Built:
    """A finalised graph, its session and what the test fetches."""

    def __init__(self, plan, graph, session, fetch, feeds=None):
        self.plan, self.graph, self.session, self.fetch, self.feeds = plan, graph, session, fetch, feeds or {}

    def run(self, fetch=None, feed_dict=None):
        """Run once, with the plan's hooks; returns (value, executed op types)."""
        metadata = v1.RunMetadata()
        run_options = v1.RunOptions(output_partition_graphs=True)
        context = v1.train.SessionRunContext(original_args=None, session=self.session)
        for hook in self.plan.hooks:
            args = hook.before_run(context)
            if args is not None and args.options is not None:
                run_options.MergeFrom(args.options)
        value = self.session.run(self.fetch if fetch is None else fetch, feed_dict=feed_dict or self.feeds,
                                 options=run_options, run_metadata=metadata)
        for hook in self.plan.hooks:
            hook.after_run(context, v1.train.SessionRunValues(results=None, options=run_options,
                                                               run_metadata=metadata))
        return value, {node.op for graph in metadata.partition_graphs for node in graph.node}


@contextlib.contextmanager
def session_for(opts, build, mode="train"):
    """Build `build(opts)` -> (fetch, feeds, initializers) as the Estimator would, yield Built."""
    plan = build_plan(opts, mode)
    with plan.environment():
        graph = tf.Graph()
        with graph.as_default(), tf.device(plan.device or None):
            v1.set_random_seed(1)
            fetch, feeds, initializers = build(opts)
            init = [v1.global_variables_initializer(), v1.local_variables_initializer()] + list(initializers)
            for transform in plan.graph_transforms:
                transform(graph, mode)
        graph.finalize()
        with v1.Session(graph=graph, config=plan.config_proto) as session:
            session.run(init)
            yield Built(plan, graph, session, fetch, feeds)


def placeholder_step(opts):
    """An MLP step fed through placeholders, built with compile_step."""
    x = v1.placeholder(tf.float32, [None, 8], name="x")
    y = v1.placeholder(tf.int32, [None], name="y")
    loss = compilation.compile_step(opts, mlp_step, [x, y])
    xs, ys = batch()
    return loss, {x: xs, y: ys}, []


def run_python(code: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python (TensorFlow reads its XLA flags once per process)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env=full_env, timeout=timeout, cwd=os.path.dirname(__file__))
    if result.returncode != 0:
        raise AssertionError(f"subprocess failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


TRAIN_TWO_STEPS = """
import json, sys, warnings
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
from helpers import options, placeholder_step, session_for
kwargs = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with session_for(options(**kwargs), placeholder_step) as built:
        _, ops = built.run()
        _, ops = built.run()
print("NPURUN_RESULT " + json.dumps({"ops": sorted(ops), "warnings": [str(w.message) for w in caught]}))
"""


def train_in_subprocess(env=None, **kwargs) -> tuple[dict, str]:
    """Two training steps of the placeholder MLP in a fresh process: ({"ops", "warnings"}, stderr)."""
    import json

    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    result = subprocess.run([sys.executable, "-c", TRAIN_TWO_STEPS, json.dumps(kwargs)], capture_output=True,
                            text=True, env=full_env, timeout=300, cwd=os.path.dirname(__file__))
    if result.returncode != 0:
        raise AssertionError(f"subprocess failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-6000:]}")
    line = next(l for l in result.stdout.splitlines() if l.startswith("NPURUN_RESULT "))
    return json.loads(line.split(" ", 1)[1]), result.stderr
