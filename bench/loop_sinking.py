"""Loop sinking: NPUEstimator steps/s with iterations_per_loop N = 1, 10, 100, against a hand-written
tf.while_loop Session loop and Keras 3 model.fit(steps_per_execution=N).

Same MLP and input as bench/estimator_overhead.py and the Keras peer script
(/work/shared/bench/peer_keras_bench.py, run with env SPE and STEPS on this virtualenv's Python).
NPUEstimator runs without checkpoints, summaries or logging; its training loop is timed inside
one train() call after 200 warm-up steps. The hand loop runs N steps per Session.run in a
tf.while_loop with get_next in the body, timed after 200 warm-up steps. Runners
alternate for --rounds rounds; the best rate of each is compared.
Usage: python bench/loop_sinking.py [--steps 3000] [--rounds 3]
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
            run = sess.make_callable(loop)
            warm = max(1, 200 // iterations)
            for _ in range(warm):
                run()
            runs = max(1, (steps - 200) // iterations)
            start = time.perf_counter()
            for _ in range(runs):
                run()
            return runs * iterations / (time.perf_counter() - start)


def keras_rate(steps: int, spe: int):
    if not os.path.exists(KERAS_PEER):
        return None, f"peer script {KERAS_PEER} not found"
    env = dict(os.environ, SPE=str(spe), STEPS=str(steps), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, KERAS_PEER], env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("steps_per_sec="):
            return float(line.split("=", 1)[1]), None
    return None, f"Keras peer failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="a multiple of 100")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    runs = {(kind, n): [] for kind in ("npurun", "hand", "keras") for n in LOOPS}
    problems = []
    for _ in range(args.rounds):
        for n in LOOPS:
            runs["npurun", n].append(npurun_rate(args.steps, n))
            runs["hand", n].append(hand_loop_rate(args.steps, n))
            rate, problem = keras_rate(args.steps, n)
            if rate is not None:
                runs["keras", n].append(rate)
            elif problem not in problems:
                problems.append(problem)
    best = {key: max(values) if values else None for key, values in runs.items()}
    print(f"steps={args.steps}, best of {args.rounds} interleaved rounds (median in brackets)")
    print(f"{'N':>4}{'NPUEstimator':>18}{'hand while_loop':>18}{'Keras SPE=N':>18}"
          f"{'vs hand':>10}{'vs Keras':>10}{'vs own N=1':>12}")
    for n in LOOPS:
        cells = []
        for kind in ("npurun", "hand", "keras"):
            values = runs[kind, n]
            cells.append(f"{max(values):>9.0f} ({statistics.median(values):>5.0f})" if values else f"{'n/a':>17}")
        ours = best["npurun", n]
        ratio = lambda other: f"{ours / other:.2f}x" if other else "n/a"
        print(f"{n:>4} " + " ".join(cells) + f"{ratio(best['hand', n]):>10}{ratio(best['keras', n]):>10}"
              f"{ratio(best['npurun', 1]):>12}")
    for problem in problems:
        print("note:", problem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
