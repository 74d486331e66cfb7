"""Data-parallel throughput on one machine: steps/s for 1, 2 and 3 ranks, and the all-reduce time per step.

Model: MLP 256 -> 512 relu -> 512 relu -> 10 (399,882 float32 parameters, 1.6 MB of gradients),
batch 64 per rank, SGD 0.01, random data fed from memory, NPUDistributedOptimizer (one grouped
all-reduce per step; `--hcom-parallel` for one per gradient). Each rank is a fresh interpreter
started like `npurun launch` does (RANK_ID, RANK_SIZE, TF_CONFIG on 127.0.0.1).

Per rank count: after --warmup steps, --steps training steps are timed (steps/s of the slowest
rank; every rank runs the same number of steps), then the all-reduce alone (the same grouped
buffer as the gradients) is timed over --steps runs: its mean is the all-reduce time per step.
With one rank there is no all-reduce. Images/s = steps/s x 64 x ranks.

Usage: python bench/distributed.py [--ranks 1,2,3] [--steps 200] [--warmup 30] [--hcom-parallel]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

BATCH, SIZES = 64, (256, 512, 512, 10)


def worker(steps: int, warmup: int, parallel: bool) -> dict:
    """One rank: time training steps, then the all-reduce alone."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from npurun.distribute import NPUDistributedOptimizer, cluster, get_rank_size, settings
    from npurun.distribute.optimizer import average_gradients, collective_count

    tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    rng = np.random.RandomState(int(os.environ.get("RANK_ID") or 0))
    x_data = rng.randn(BATCH, SIZES[0]).astype(np.float32)
    y_data = rng.randint(0, SIZES[-1], BATCH).astype(np.int32)
    x = v1.placeholder_with_default(x_data, [BATCH, SIZES[0]])
    y = v1.placeholder_with_default(y_data, [BATCH])
    h = x
    variables = []
    for i, (a, b) in enumerate(zip(SIZES, SIZES[1:])):
        w = v1.get_variable(f"w{i}", [a, b], initializer=v1.glorot_uniform_initializer(seed=i))
        bias = v1.get_variable(f"b{i}", [b], initializer=v1.zeros_initializer())
        variables += [w, bias]
        h = tf.matmul(h, w) + bias
        if i < len(SIZES) - 2:
            h = tf.nn.relu(h)
    loss = v1.losses.sparse_softmax_cross_entropy(y, h)
    with settings.use(hcom_parallel=parallel, hccl_timeout=120):
        train_op = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.01)).minimize(loss)
        per_step = collective_count()  # the collectives of one training step
        grads = [tf.zeros_like(v) for v in variables]
        reduce_only = tf.group(*[g for g, _ in average_gradients(list(zip(grads, variables)))[0]])
    done = cluster.barrier_op(120)
    session = cluster.create_session()
    session.run(v1.global_variables_initializer())
    run_train = session.make_callable(train_op)
    run_reduce = session.make_callable(reduce_only)
    for _ in range(warmup):
        run_train()
    session.run(done)
    start = time.perf_counter()
    for _ in range(steps):
        run_train()
    train_seconds = time.perf_counter() - start
    session.run(done)
    for _ in range(warmup):
        run_reduce()
    start = time.perf_counter()
    for _ in range(steps):
        run_reduce()
    reduce_seconds = time.perf_counter() - start
    session.run(done)
    return {"rank": int(os.environ.get("RANK_ID") or 0), "ranks": get_rank_size(),
            "steps_per_s": steps / train_seconds,
            "allreduce_ms": 1000 * reduce_seconds / steps if get_rank_size() > 1 else 0.0,
            "collectives_per_step": per_step,
            "parameters": int(sum(np.prod(v.shape.as_list()) for v in variables))}


def run_ranks(n: int, steps: int, warmup: int, parallel: bool) -> list[dict]:
    from npurun.distribute.launch import plan_tasks

    procs = []
    for task in plan_tasks(n):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG")}
        env.update(task.env, CUDA_VISIBLE_DEVICES="", HCCL_CONNECT_TIMEOUT="120")
        if n == 1:
            env.pop("TF_CONFIG")  # one rank: a plain in-process session, as a single-device run
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(steps), "--warmup", str(warmup)]
        procs.append(subprocess.Popen(argv + (["--hcom-parallel"] if parallel else []), env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode:
            raise SystemExit(f"a rank failed ({proc.returncode}):\n{err[-3000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2,3")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--hcom-parallel", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.steps, args.warmup, args.hcom_parallel)))
        return
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"{'per-gradient' if args.hcom_parallel else 'grouped'} all-reduce; {args.steps} timed steps")
    print(f"{'ranks':>5} {'steps/s':>9} {'images/s':>9} {'all-reduce ms/step':>19} {'collectives/step':>16}")
    for n in (int(r) for r in args.ranks.split(",")):
        results = run_ranks(n, args.steps, args.warmup, args.hcom_parallel)
        rate = min(r["steps_per_s"] for r in results)
        reduce_ms = max(r["allreduce_ms"] for r in results)
        print(f"{n:>5} {rate:>9.1f} {rate * BATCH * n:>9.0f} {reduce_ms:>19.2f} "
              f"{results[0]['collectives_per_step']:>16}", flush=True)


if __name__ == "__main__":
    main()
