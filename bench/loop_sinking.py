"""Loop sinking: NPUEstimator steps/s with iterations_per_loop N = 1, 10, 100, against a hand-written
tf.while_loop Session loop and Keras 3 model.fit(steps_per_execution=N), in two settings:

- TensorFlow executor (npurun's default on a CPU, jit_compile "auto"): the Keras peer is
  /work/shared/bench/peer_keras_bench.py (jit_compile=False); the hand loop runs N steps per
  Session.run in a tf.while_loop with get_next in the body.
- XLA (jit_compile="true": the whole step, or the whole loop, is one XLA computation, as the loop
  is sunk to the device on an NPU): the Keras peer is bench/keras_fit.py with jit_compile=True; the
  hand loop is xla.compile of a tf.while_loop over N stacked batches.

Same MLP and input everywhere (bench/estimator_overhead.py). NPUEstimator runs without
checkpoints, summaries or logging; its training loop is timed inside one train() call after 200
warm-up steps; the hand loops are timed after 200 warm-up steps. Runners alternate for --rounds
rounds; the best rate of each is compared (median in brackets).
Usage: python bench/loop_sinking.py [--steps 3000] [--rounds 3] [--only executor|xla]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from estimator_overhead import _mlp, input_fn, npurun_rate  # noqa: E402  (same model and input)

KERAS_PEER = os.environ.get("NPURUN_PEER_KERAS", "/work/shared/bench/peer_keras_bench.py")
KERAS_JIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_fit.py")
LOOPS = (1, 10, 100)


def hand_loop_rate(steps: int, iterations: int) -> float:
    """Steps/s of a hand-written Session loop running `iterations` steps per run in a tf.while_loop."""
    import tensorflow as tf
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        iterator = v1.data.make_initializable_iterator(input_fn())

        def body(i):
            # Everything waits for i, and i + 1 waits for the update: one step after the other.
            with tf.control_dependencies([i]):
                features, labels = iterator.get_next()
            _, train_op = _mlp(features["x"], labels)
            with tf.control_dependencies([train_op]):
                return i + 1

        with v1.variable_scope("model", reuse=v1.AUTO_REUSE):
            loop = tf.while_loop(lambda i: i < iterations, body, [tf.constant(0)])
        init = v1.global_variables_initializer()
        graph.finalize()
        with v1.Session(graph=graph) as sess:
            sess.run([init, iterator.initializer])
            return _timed(sess.make_callable(loop), steps, iterations)


def hand_xla_loop_rate(steps: int, iterations: int) -> float:
    """Steps/s of a hand-written XLA loop: xla.compile of a tf.while_loop over N stacked batches."""
    import tensorflow as tf
    from tensorflow.python.compiler.xla import xla
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        iterator = v1.data.make_initializable_iterator(input_fn().batch(iterations, drop_remainder=True))
        features, labels = iterator.get_next()

        def computation(x, y):
            def body(i):
                loss, train_op = _mlp(x[i], y[i])
                with tf.control_dependencies([train_op]):
                    return i + 1
            with v1.variable_scope("model", reuse=v1.AUTO_REUSE):
                return tf.while_loop(lambda i: i < iterations, body, [tf.constant(0)], maximum_iterations=iterations)

        loop = xla.compile(computation, [features["x"], labels])
        init = v1.global_variables_initializer()
        graph.finalize()
        with v1.Session(graph=graph) as sess:
            sess.run([init, iterator.initializer])
            return _timed(sess.make_callable(loop), steps, iterations)


def _timed(run, steps: int, iterations: int) -> float:
    for _ in range(max(1, 200 // iterations)):
        run()
    runs = max(1, (steps - 200) // iterations)
    start = time.perf_counter()
    for _ in range(runs):
        run()
    return runs * iterations / (time.perf_counter() - start)


def keras_rate(steps: int, spe: int, jit: bool = False):
    script = KERAS_JIT if jit else KERAS_PEER
    if not os.path.exists(script):
        return None, f"peer script {script} not found"
    env = dict(os.environ, SPE=str(spe), STEPS=str(steps), JIT="1" if jit else "0", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("steps_per_sec="):
            return float(line.split("=", 1)[1]), None
    return None, f"Keras peer failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"


SETTINGS = {
    "executor": ("TensorFlow executor (jit_compile='auto' on a CPU)", {},
                 hand_loop_rate, lambda steps, n: keras_rate(steps, n)),
    "xla": ("XLA (jit_compile='true')", {"jit_compile": "true"},
            hand_xla_loop_rate, lambda steps, n: keras_rate(steps, n, jit=True)),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="a multiple of 100")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=sorted(SETTINGS), help="measure one setting only")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    names = [args.only] if args.only else list(SETTINGS)
    runs = {(name, kind, n): [] for name in names for kind in ("npurun", "hand", "keras") for n in LOOPS}
    problems = []
    for _ in range(args.rounds):
        for name in names:
            _, options, hand, keras = SETTINGS[name]
            for n in LOOPS:
                runs[name, "npurun", n].append(npurun_rate(args.steps, n, **options))
                runs[name, "hand", n].append(hand(args.steps, n))
                rate, problem = keras(args.steps, n)
                if rate is not None:
                    runs[name, "keras", n].append(rate)
                elif problem not in problems:
                    problems.append(problem)
    print(f"steps={args.steps}, best of {args.rounds} interleaved rounds (median in brackets)")
    for name in names:
        _report(SETTINGS[name][0], {key[1:]: values for key, values in runs.items() if key[0] == name})
    if len(names) == 2:
        best = lambda name, n: max(runs[name, "npurun", n])
        print(f"XLA N=100 vs the executor's N=1: {best('xla', 100) / best('executor', 1):.2f}x")
    for problem in problems:
        print("note:", problem)
    return 0


def _report(title, runs):
    best = {key: max(values) if values else None for key, values in runs.items()}
    print(f"\n{title}")
    print(f"| N | NPUEstimator | hand loop | Keras SPE=N | vs hand | vs Keras | vs own N=1 |")
    print("|---|---|---|---|---|---|---|")
    for n in LOOPS:
        cells = []
        for kind in ("npurun", "hand", "keras"):
            values = runs[kind, n]
            cells.append(f"{max(values):.0f} ({statistics.median(values):.0f})" if values else "n/a")
        ours = best["npurun", n]
        ratio = lambda other: f"{ours / other:.2f}x" if other else "n/a"
        print(f"| {n} | " + " | ".join(cells) + f" | {ratio(best['hand', n])} | {ratio(best['keras', n])} | "
              f"{ratio(best['npurun', 1])} |")


if __name__ == "__main__":
    sys.exit(main())
