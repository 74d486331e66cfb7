"""What the ranks' stop agreement costs: 2-rank NPUEstimator steps/s with and without the stop flag.

With more than one rank, every training run also all-reduces a one-int stop flag (max) in parallel
with the step (distribute/stop_flag.py), so that all ranks stop after the same run when one is
signalled. This measures the cost of that collective in NPUEstimator's own loop (the hot path: no
hooks), on two models:
  - tiny: a 2->1 linear model, batch 4 per rank (a step is almost nothing but overhead: the worst
    case for a per-run collective);
  - mlp: bench/distributed.py's MLP 256 -> 512 -> 512 -> 10 (399,882 parameters), batch 64 per rank;
each with iterations_per_loop 1 and 10. "off" builds the same training without the flag (the bench
replaces the contributor's flag builder; there is no user switch). Per setting the ranks train
--steps steps (after a warm-up), alternating on/off --rounds times; the rate is the global_step/sec
NPUEstimator logs every 100 steps, median over the rounds' log lines, slowest rank.

Each rank is a fresh interpreter started as `npurun launch` does (RANK_ID, RANK_SIZE, TF_CONFIG).
Usage: python bench/stop_flag.py [--steps 1000] [--rounds 3] [--models tiny,mlp] [--loops 1,10]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile

MLP = (256, 512, 512, 10)


def worker(models, loops, steps, rounds) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.distribute import NPUDistributedOptimizer, contribute, get_rank_id
    from npurun.estimator import EstimatorSpec, NPUEstimator

    tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    rates: list = []

    class Rates(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith("global_step/sec: "):
                rates.append(float(message.split(": ")[1]))

    logging.getLogger("npurun").addHandler(Rates())
    logging.getLogger("npurun").setLevel(logging.INFO)
    flag_builder = contribute._collective_stop_flag
    rng = np.random.RandomState(get_rank_id())

    def input_fn_for(model):
        if model == "tiny":
            x = rng.randn(64, 2).astype(np.float32)
            y = x[:, :1] - x[:, 1:]
            return lambda: tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(4)
        x = rng.randn(640, MLP[0]).astype(np.float32)
        y = rng.randint(0, MLP[-1], 640).astype(np.int32)
        return lambda: tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)

    def model_fn_for(model):
        def model_fn(features, labels, mode):
            if model == "tiny":
                w = v1.get_variable("w", initializer=np.zeros([2, 1], np.float32))
                loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
            else:
                h = features
                for i, (a, b) in enumerate(zip(MLP, MLP[1:])):
                    h = tf.matmul(h, v1.get_variable(f"w{i}", [a, b])) + v1.get_variable(f"b{i}", [b])
                    h = tf.nn.relu(h) if i < len(MLP) - 2 else h
                loss = v1.losses.sparse_softmax_cross_entropy(labels, h)
            opt = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.01))
            return EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, global_step=v1.train.get_global_step()))
        return model_fn

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for loop in loops:
                for round_ in range(rounds):
                    for setting in ("on", "off"):
                        contribute._collective_stop_flag = flag_builder if setting == "on" else (lambda: None)
                        config = NPURunConfig(model_dir=os.path.join(tmp, f"{model}{loop}{setting}{round_}"),
                                              iterations_per_loop=loop, save_checkpoints_steps=0,
                                              save_summary_steps=0, log_step_count_steps=100)
                        rates.clear()
                        NPUEstimator(model_fn_for(model), config=config).train(
                            input_fn_for(model), steps=steps + 200)  # the first two rate lines are warm-up
                        results.setdefault(f"{model} ipl={loop} {setting}", []).extend(rates[2:])
                        print("threads", len(os.listdir("/proc/self/task")), file=sys.stderr, flush=True)
    contribute._collective_stop_flag = flag_builder
    return {key: statistics.median(values) for key, values in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="tiny,mlp")
    parser.add_argument("--loops", default="1,10")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    models, loops = args.models.split(","), [int(n) for n in args.loops.split(",")]
    if args.worker:
        print(json.dumps(worker(models, loops, args.steps, args.rounds)))
        return
    from npurun.distribute.launch import plan_tasks

    procs = []
    for task in plan_tasks(2):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG")}
        env.update(task.env, CUDA_VISIBLE_DEVICES="", HCCL_CONNECT_TIMEOUT="120")
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(args.steps), "--rounds",
                str(args.rounds), "--models", args.models, "--loops", args.loops]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode:
            raise SystemExit(f"a rank failed ({proc.returncode}):\n{err[-3000:]}")
        print([line for line in err.splitlines() if line.startswith("threads")])
        results.append(json.loads(out.strip().splitlines()[-1]))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; 2 ranks; {args.steps} steps x "
          f"{args.rounds} rounds per setting")
    print(f"{'model':>5} {'ipl':>4} {'steps/s on':>11} {'steps/s off':>12} {'cost':>7}")
    for model in models:
        for loop in loops:
            on = min(r[f"{model} ipl={loop} on"] for r in results)
            off = min(r[f"{model} ipl={loop} off"] for r in results)
            print(f"{model:>5} {loop:>4} {on:>11.1f} {off:>12.1f} {100 * (off - on) / off:>6.1f}%", flush=True)


if __name__ == "__main__":
    main()
