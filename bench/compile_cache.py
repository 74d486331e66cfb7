"""Compilation benchmarks, each measurement in a fresh process.

    python bench/compile_cache.py            # time to first training step: cold vs warm XLA cache
    python bench/compile_cache.py --modes    # also steady-state step time: no XLA / whole step / mixed

Cache: a mid-size CNN (3 conv layers + 2 dense, Momentum, batch 32 of 32x32x3) trained with
`jit_compile="true"`; the cold run uses `op_compiler_cache_mode="force"` (the cache folder is
emptied first), the warm runs `"enable"` on the same folder. "first step" is measured from the
start of graph building (after `import tensorflow`) to the end of the first Session.run, which
holds the XLA compilation; "process" is the child's whole wall time. Target: warm <= 0.5 x cold.

Modes: the same model (and an MLP) run 5 warm-up steps and then 30 timed steps in each of
jit_compile="false", "true" (whole step) and "true" with mix_compile_mode=True; the median of
three processes per cell is reported. This is the measurement behind jit_compile="auto"'s choice
on a CPU (docs/compilation.md).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

START = time.perf_counter()

CHILD = "--child"


def child(spec: dict) -> None:
    """Build and train in this process; print one JSON line of timings."""
    import warnings

    import numpy as np
    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.runtime import compilation
    from npurun.runtime.contributors import build_plan

    tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    imported = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = NPURunConfig(**spec["options"]).options
        plan = build_plan(options, "train")

    def dense(x, units, name, relu=True):
        w = v1.get_variable(name + "/w", [x.shape[-1], units], initializer=v1.glorot_uniform_initializer(seed=1))
        b = v1.get_variable(name + "/b", [units], initializer=v1.zeros_initializer())
        y = tf.nn.bias_add(tf.matmul(x, w), b)
        return tf.nn.relu(y) if relu else y

    def conv(x, channels, name):
        w = v1.get_variable(name + "/w", [3, 3, x.shape[-1], channels], initializer=v1.glorot_uniform_initializer(seed=1))
        b = v1.get_variable(name + "/b", [channels], initializer=v1.zeros_initializer())
        return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))

    def model(x):
        if spec["model"] == "mlp":
            h = tf.reshape(x, [-1, 32 * 32 * 3])
            for i in range(3):
                h = dense(h, 1024, f"d{i}")
            return dense(h, 10, "out", relu=False)
        h = tf.nn.max_pool2d(conv(x, 32, "c1"), 2, 2, "VALID")
        h = tf.nn.max_pool2d(conv(h, 64, "c2"), 2, 2, "VALID")
        h = tf.nn.max_pool2d(conv(h, 128, "c3"), 2, 2, "VALID")
        h = dense(tf.reshape(h, [-1, 4 * 4 * 128]), 256, "d1")
        return dense(h, 10, "out", relu=False)

    def step(x, y):
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))
        update = v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss, global_step=v1.train.get_or_create_global_step())
        with tf.control_dependencies([update]):
            return tf.identity(loss)

    rng = np.random.RandomState(0)
    feed_x, feed_y = rng.rand(32, 32, 32, 3).astype(np.float32), rng.randint(0, 10, 32).astype(np.int32)
    with plan.environment():
        build_start = time.perf_counter()
        graph = tf.Graph()
        with graph.as_default():
            x = v1.placeholder(tf.float32, [32, 32, 32, 3])
            y = v1.placeholder(tf.int32, [32])
            loss = compilation.compile_step(options, step, [x, y])
            init = v1.global_variables_initializer()
            for transform in plan.graph_transforms:
                transform(graph, "train")
        graph.finalize()
        with v1.Session(graph=graph, config=plan.config_proto) as session:
            session.run(init)
            session.run(loss, {x: feed_x, y: feed_y})
            first = time.perf_counter() - build_start
            step_ms = None
            if spec.get("steps"):
                for _ in range(5):
                    session.run(loss, {x: feed_x, y: feed_y})
                begin = time.perf_counter()
                for _ in range(spec["steps"]):
                    session.run(loss, {x: feed_x, y: feed_y})
                step_ms = (time.perf_counter() - begin) / spec["steps"] * 1000
    print("BENCH " + json.dumps({"first_step_s": first, "import_s": imported - START, "step_ms": step_ms,
                                 "process_s": time.perf_counter() - START}))


def run_child(spec: dict) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, __file__, CHILD, json.dumps(spec)], capture_output=True, text=True,
                            env=env, timeout=900)
    if result.returncode:
        raise SystemExit(f"child failed: {result.stderr[-4000:]}")
    line = next(l for l in result.stdout.splitlines() if l.startswith("BENCH "))
    return json.loads(line.split(" ", 1)[1])


def cache_table() -> str:
    folder = tempfile.mkdtemp(prefix="npurun_bench_cache_")
    base = {"jit_compile": "true", "op_compiler_cache_dir": folder}
    runs = [("cold (force: cache emptied)", run_child({"model": "cnn", "options": {**base, "op_compiler_cache_mode": "force"}}))]
    for i in (1, 2):
        runs.append((f"warm {i} (enable)", run_child({"model": "cnn", "options": {**base, "op_compiler_cache_mode": "enable"}})))
    cold = runs[0][1]["first_step_s"]
    lines = ["| run | first step (s) | ratio to cold | whole process (s) |", "|---|---|---|---|"]
    for name, r in runs:
        lines.append(f"| {name} | {r['first_step_s']:.2f} | {r['first_step_s'] / cold:.2f} | {r['process_s']:.2f} |")
    entries = os.listdir(os.path.join(folder, "kernel_cache"))
    warm = max(r["first_step_s"] for _, r in runs[1:])
    lines.append("")
    lines.append(f"cache entries: {len(entries)}; target warm <= 0.5 x cold: "
                 f"{'met' if warm <= 0.5 * cold else 'NOT met'} (worst warm / cold = {warm / cold:.2f})")
    return "\n".join(lines)


def modes_table(repeats: int = 3) -> str:
    modes = [("off (jit_compile='false')", {"jit_compile": "false"}),
             ("whole step (jit_compile='true')", {"jit_compile": "true"}),
             ("mixed (jit_compile='true', mix_compile_mode=True)", {"jit_compile": "true", "mix_compile_mode": True})]
    lines = ["| model | mode | first step (s) | step (ms), median of 3 processes |", "|---|---|---|---|"]
    for model in ("cnn", "mlp"):
        for name, options in modes:
            results = [run_child({"model": model, "options": options, "steps": 30}) for _ in range(repeats)]
            lines.append(f"| {model} | {name} | {statistics.median(r['first_step_s'] for r in results):.2f} | "
                         f"{statistics.median(r['step_ms'] for r in results):.1f} |")
    return "\n".join(lines)


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(cache_table())
    if "--modes" in sys.argv:
        print()
        print(modes_table())


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        child(json.loads(sys.argv[2]))
    else:
        main()
