"""Training-loop overhead: NPUEstimator.train vs the classic tf.estimator vs a plain Session.run loop.

Same model and input as the peer script /work/shared/bench/peer_estimator_bench.py (MLP 64 -> 128
relu -> 10, batch 32, SGD 0.1, random data). NPUEstimator runs with iterations_per_loop=1 and
no checkpoints, summaries or logging. The classic Estimator runs in its own virtualenv
(TF 2.15 with tensorflow-estimator, created on first use under ~/.cache/npurun-bench/tf215 by
tests/compat/tf215_env.py; skipped with a message when that cannot be installed).

Steps/s, each after 200 warm-up steps: NPUEstimator's training loop timed inside one train() call
(TrainingLoop.run is run to step 200 first, then timed to the end: graph building and session
start are excluded); the plain loop times its steps after 200; the peer measures after its first
200 steps. The runners alternate for --rounds rounds and the best rate of each is compared (other
load on the machine only slows runs down). Usage: python bench/estimator_overhead.py [--steps N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

PEER = os.environ.get("NPURUN_PEER_ESTIMATOR", "/work/shared/bench/peer_estimator_bench.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32


def input_fn():
    import tensorflow as tf
    rng = np.random.RandomState(0)
    x = rng.rand(1797, 64).astype("float32")
    y = rng.randint(0, 10, 1797).astype("int32")
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(BATCH, drop_remainder=True).prefetch(4)


def model_fn(features, labels, mode):
    from npurun.estimator import EstimatorSpec
    loss, train_op = _mlp(features["x"], labels)
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def _mlp(x, labels):
    import tensorflow as tf
    v1 = tf.compat.v1
    h = tf.nn.relu(tf.matmul(x, v1.get_variable("w1", [64, 128]))
                   + v1.get_variable("b1", [128], initializer=v1.zeros_initializer()))
    logits = tf.matmul(h, v1.get_variable("w2", [128, 10])) + v1.get_variable("b2", [10],
                                                                             initializer=v1.zeros_initializer())
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_or_create_global_step())
    return loss, train_op


def npurun_rate(steps: int, iterations: int = 1, **options) -> float:
    """Steps/s of NPUEstimator.train's training loop, timed inside one train() call: the loop is
    run to a warm-up step first, then timed from there to `steps` (graph building, session start
    and the first runs excluded, as for the other runners). `options`: more NPURunConfig options."""
    import npurun
    from npurun.estimator import NPUEstimator, loop

    config = npurun.NPURunConfig(save_checkpoints_steps=0, save_summary_steps=0, log_step_count_steps=None,
                                 iterations_per_loop=iterations, **options)
    warm = -(-200 // iterations) * iterations  # 200 steps, rounded up to whole loops
    timing = {}
    real_run = loop.TrainingLoop.run

    def timed_run(self, start_step, last_step):
        real_run(self, start_step, start_step + warm)
        begin = time.perf_counter()
        reached = real_run(self, start_step + warm, last_step)
        timing["rate"] = (reached - start_step - warm) / (time.perf_counter() - begin)
        return reached

    loop.TrainingLoop.run = timed_run
    try:
        NPUEstimator(model_fn, model_dir=tempfile.mkdtemp(), config=config).train(input_fn, steps=steps)
    finally:
        loop.TrainingLoop.run = real_run
    return timing["rate"]


def plain_rate(steps: int) -> float:
    """Steps/s of a hand-written loop: sess.run(train_op), timed after 200 warm-up steps."""
    import tensorflow as tf
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        iterator = v1.data.make_initializable_iterator(input_fn())
        features, labels = iterator.get_next()
        _, train_op = _mlp(features["x"], labels)
        init = v1.global_variables_initializer()
        graph.finalize()
        with v1.Session(graph=graph) as sess:
            sess.run([init, iterator.initializer])
            for _ in range(200):
                sess.run(train_op)
            start = time.perf_counter()
            for _ in range(steps - 200):
                sess.run(train_op)
            return (steps - 200) / (time.perf_counter() - start)


def classic_rate(steps: int):
    """Steps/s of the classic Estimator (peer script in the TF 2.15 venv), or (None, reason)."""
    if not os.path.exists(PEER):
        return None, f"peer script {PEER} not found"
    # The reference venv is shared with the compatibility tests, which own its creation.
    sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
    try:
        import tf215_env
        python = str(tf215_env.ensure())
    except (ImportError, RuntimeError, OSError) as err:
        return None, f"classic Estimator skipped: no TF 2.15 venv ({str(err).splitlines()[0]})"
    env = dict(os.environ, STEPS=str(steps), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([python, PEER], env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("steps_per_sec="):
            return float(line.split("=", 1)[1]), None
    return None, f"peer failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is shown")
    parser.add_argument("--skip-classic", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    names = ("NPUEstimator.train", "plain Session.run loop", "classic tf.estimator 2.15")
    runs = {name: [] for name in names}
    reason = "skipped (--skip-classic)" if args.skip_classic else None
    # Interleaved rounds, best of each: other processes on the machine only ever slow a run down.
    for _ in range(args.rounds):
        runs[names[0]].append(npurun_rate(args.steps))
        runs[names[1]].append(plain_rate(args.steps))
        if reason is None:
            rate, reason = classic_rate(args.steps)
            if rate is not None:
                runs[names[2]].append(rate)
    ours = max(runs[names[0]])
    print(f"steps={args.steps}, best of {args.rounds} interleaved rounds (median in brackets)")
    print(f"{'runner':<28}{'steps/s':>16}{'NPUEstimator / runner':>24}")
    for name in names:
        if not runs[name]:
            print(f"{name:<28}{'n/a':>16}{'':>24}  ({reason})")
            continue
        best, median = max(runs[name]), statistics.median(runs[name])
        print(f"{name:<28}{best:>8.0f} ({median:>5.0f}){ours / best:>23.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
