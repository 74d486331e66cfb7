"""What the ranks' stop agreement costs: 2-rank NPUEstimator steps/s with and without the stop flag.

With more than one rank, every training run also reduces a stop flag over the ranks
(distribute/stop_flag.py), so that all ranks stop after the same run when one is signalled: riding
in the gradient all-reduce ("ride", the default with one step per run) or as an all-reduce of its
own ("own", the default in a device loop, forced here for one step per run by disabling the
rider). This measures NPUEstimator's own loop (the hot path: no hooks), on two models:
  - tiny: a 2->1 linear model, batch 4 per rank (a step is almost nothing but overhead: the worst
    case for a per-run collective);
  - mlp: bench/distributed.py's MLP 256 -> 512 -> 512 -> 10 (399,882 parameters), batch 64 per rank;
each with iterations_per_loop 1 and 10. "off" builds the same training without the flag (the bench
replaces the contributor's flag builder; there is no user switch). Per setting the ranks train
--steps steps (after a warm-up), the settings in turn (each goes first in one of the rounds), in
--rounds pairs of fresh ranks; the rate is the
global_step/sec NPUEstimator logs every 100 steps, median over the rounds' log lines, slowest rank.

Each rank is a fresh interpreter started as `npurun launch` does (RANK_ID, RANK_SIZE, TF_CONFIG),
a new pair per model, loop and round.
Usage: python bench/stop_flag.py [--steps 400] [--rounds 3] [--models tiny,mlp] [--loops 1,10]
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


def worker(models, loops, steps, rounds, rotate=0) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.distribute import NPUDistributedOptimizer, contribute, get_rank_id, stop_flag
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
    flag_builder, rider = contribute._collective_stop_flag, stop_flag.rider
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
                    settings = ["ride", "own", "off"] if loop == 1 else ["own", "off"]
                    rotation = (rotate + round_) % len(settings)  # each setting goes first in some round
                    for setting in settings[rotation:] + settings[:rotation]:
                        contribute._collective_stop_flag = flag_builder if setting != "off" else (lambda: None)
                        stop_flag.rider = rider if setting == "ride" else (lambda dtype: None)
                        config = NPURunConfig(model_dir=os.path.join(tmp, f"{model}{loop}{setting}{round_}"),
                                              iterations_per_loop=loop, save_checkpoints_steps=0,
                                              save_summary_steps=0, log_step_count_steps=100)
                        rates.clear()
                        NPUEstimator(model_fn_for(model), config=config).train(
                            input_fn_for(model), steps=steps + 200)  # the first two rate lines are warm-up
                        results.setdefault(f"{model} ipl={loop} {setting}", []).extend(rates[2:])
    contribute._collective_stop_flag, stop_flag.rider = flag_builder, rider
    return {key: statistics.median(values) for key, values in results.items()}


def _run_pair(model: str, loop: int, steps: int, rotate: int) -> dict:
    """Two fresh ranks train every setting once; {setting key: steps/s of the slower rank}."""
    from npurun.distribute.launch import plan_tasks

    procs = []
    for task in plan_tasks(2):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG")}
        env.update(task.env, CUDA_VISIBLE_DEVICES="", HCCL_CONNECT_TIMEOUT="120")
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(steps), "--rounds", "1",
                "--models", model, "--loops", str(loop), "--rotate", str(rotate)]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    rates = []
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode:
            raise SystemExit(f"a rank failed ({proc.returncode}):\n{err[-3000:]}")
        rates.append(json.loads(out.strip().splitlines()[-1]))
    return {key: min(r[key] for r in rates) for key in rates[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="tiny,mlp")
    parser.add_argument("--loops", default="1,10")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rotate", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    models, loops = args.models.split(","), [int(n) for n in args.loops.split(",")]
    if args.worker:
        print(json.dumps(worker(models, loops, args.steps, args.rounds, args.rotate)))
        return
    # A pair of fresh ranks per model, loop and round: TensorFlow's gRPC collectives keep two threads
    # per collective run until the process ends, so one process running every setting would pile up
    # thousands of threads (and could hit the machine's limit).
    results: dict = {}
    for model in models:
        for loop in loops:
            for round_ in range(args.rounds):
                for key, rate in _run_pair(model, loop, args.steps, round_).items():
                    results.setdefault(key, []).append(rate)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; 2 ranks; {args.steps} "
          f"timed steps x {args.rounds} rounds per setting")
    print(f"{'model':>5} {'ipl':>4} {'flag':>5} {'steps/s':>8} {'vs off':>7}")
    for model in models:
        for loop in loops:
            off = statistics.median(results[f"{model} ipl={loop} off"])
            for setting in ("ride", "own", "off") if loop == 1 else ("own", "off"):
                rate = statistics.median(results[f"{model} ipl={loop} {setting}"])
                print(f"{model:>5} {loop:>4} {setting:>5} {rate:>8.1f} {100 * (rate - off) / off:>+6.1f}%", flush=True)


if __name__ == "__main__":
    main()
