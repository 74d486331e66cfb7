"""Training steps/s of every precision_mode on this machine: npurun's default policy and forced, against float32.

For each low-precision mode two cases run: under the machine's default policy (`npurun.precision.policy`:
on a CPU, float32 unless the low dtype was measured within 1.2x of float32) and with
NPURUN_FORCE_LOW_PRECISION=1 (the real float16/bfloat16 graph). Sessions come from
`build_plan(NPURunConfig(precision_mode=...).options, "train")`, the same plan `npurun run`, the
Estimator and sess.run mode use; the executed MatMul/Conv2D dtype is read from the partition graphs.

Models (random data generated in the graph, plain SGD):
- mlp: 4-layer 1024-wide ReLU MLP + 10-way softmax cross-entropy, batch 256 (matmul-bound);
- lenet: LeNet-style CNN (conv5x5x32, pool, conv5x5x64, pool, fc512, fc10) on 28x28x1, batch 64.

All cases of one oneDNN setting run in ONE process, side by side: every case's session is built
first, then each round times `--steps` steps of every case in turn (a round stops early after
`--max-seconds`, for cases that are very slow), and the best round counts. So load from other work
on the machine hits all cases alike. oneDNN is fixed when TensorFlow starts
(TF_ENABLE_ONEDNN_OPTS): cases run with TensorFlow's default for this CPU; if that is off, the bf16
cases and a float32 baseline run again in a second process with oneDNN on.

With `--npurun-run`, the same LeNet-style model also runs as an Ascend-style NPUEstimator script
under `npurun run` (a fresh process per run, float32 and allow_mix_precision alternating), which is
the path the acceptance of issue 17 names; steps/s are timed by a hook from step 10 on.

Usage: python bench/precision.py [--model mlp lenet] [--steps 10] [--warmup 2] [--rounds 3] [--max-seconds 20]
                                 [--modes MODE ...] [--npurun-run] [--run-steps 100]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

LOW_MODES = ("allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16", "force_fp16")
FORCE_ENV = "NPURUN_FORCE_LOW_PRECISION"


def _mlp(tf, v1):
    width, depth, batch = 1024, 4, 256
    hidden = tf.random.normal([batch, width], seed=1)
    labels = tf.random.uniform([batch], 0, 10, dtype=tf.int32, seed=2)
    for layer in range(depth):
        w = v1.get_variable(f"w{layer}", [width, width], initializer=v1.glorot_uniform_initializer(seed=layer))
        b = v1.get_variable(f"b{layer}", [width], initializer=v1.zeros_initializer())
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(hidden, w), b))
    w_out = v1.get_variable("w_out", [width, 10], initializer=v1.glorot_uniform_initializer(seed=9))
    return labels, tf.matmul(hidden, w_out)


def _lenet(tf, v1):
    batch = 64
    images = tf.random.normal([batch, 28, 28, 1], seed=1)
    labels = tf.random.uniform([batch], 0, 10, dtype=tf.int32, seed=2)
    hidden = images
    for index, channels in enumerate((32, 64)):
        kernel = v1.get_variable(f"conv{index}", [5, 5, hidden.shape[-1], channels],
                                 initializer=v1.glorot_uniform_initializer(seed=index))
        hidden = tf.nn.relu(tf.nn.conv2d(hidden, kernel, strides=1, padding="SAME"))
        hidden = tf.nn.max_pool2d(hidden, ksize=2, strides=2, padding="SAME")
    hidden = tf.reshape(hidden, [batch, 7 * 7 * 64])
    w1 = v1.get_variable("fc1", [7 * 7 * 64, 512], initializer=v1.glorot_uniform_initializer(seed=5))
    hidden = tf.nn.relu(tf.matmul(hidden, w1))
    w2 = v1.get_variable("fc2", [512, 10], initializer=v1.glorot_uniform_initializer(seed=6))
    return labels, tf.matmul(hidden, w2)


def _build_case(model: str, precision_mode, forced: bool):
    """Runs in the child: a session for one case, after its first (graph-rewriting) step."""
    import warnings

    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.runtime.contributors import build_plan

    v1 = tf.compat.v1
    os.environ[FORCE_ENV] = "1" if forced else "0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = build_plan(NPURunConfig(precision_mode=precision_mode).options, "train")
    graph = tf.Graph()
    with graph.as_default(), tf.device("/device:CPU:0"):
        labels, logits = {"mlp": _mlp, "lenet": _lenet}[model](tf, v1)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = v1.global_variables_initializer()
    with plan.environment():
        session = v1.Session(graph=graph, config=plan.config_proto)
        session.run(init)
        metadata = v1.RunMetadata()
        session.run(train, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    dtypes = sorted({tf.as_dtype(node.attr["T"].type).name for part in metadata.partition_graphs
                     for node in part.node if ("MatMul" in node.op or "Conv2D" in node.op) and "T" in node.attr})
    return plan, session, train, dtypes


def _child(request: dict) -> dict:
    from npurun.precision import policy
    from npurun.precision.modes import onednn_enabled

    args = request["args"]
    cases = []
    for model, mode, forced in request["cases"]:
        plan, session, train, dtypes = _build_case(model, mode, forced)
        decision = policy.decide(mode, gpu=False, features=policy.cpu_features(), force=forced)
        with plan.environment():
            for _ in range(args["warmup"]):
                session.run(train)
        cases.append({"key": [model, mode, forced], "dtypes": dtypes, "decision": decision.summary(),
                      "plan": plan, "session": session, "train": train, "best": 0.0})
    for _ in range(args["rounds"]):
        for case in cases:
            done, start = 0, time.perf_counter()
            with case["plan"].environment():
                while done < args["steps"] and (done == 0 or time.perf_counter() - start < args["max_seconds"]):
                    case["session"].run(case["train"])
                    done += 1
            case["best"] = max(case["best"], done / (time.perf_counter() - start))
    for case in cases:
        case["session"].close()
    return {"onednn": onednn_enabled(),
            "cases": [{k: case[k] for k in ("key", "dtypes", "decision", "best")} for case in cases]}


def _run_child(cases, onednn, args) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="-1")
    if onednn is None:
        env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    else:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    request = json.dumps({"cases": cases, "args": vars(args)})
    proc = subprocess.run([sys.executable, __file__, "--child", request], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


NPURUN_RUN_SCRIPT = r'''
# LeNet-style NPUEstimator training script, Ascend style; argv: precision_mode (or "None"), steps.
import sys
import time

import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator

precision_mode, steps = (None if sys.argv[1] == "None" else sys.argv[1]), int(sys.argv[2])


def model_fn(features, labels, mode, params):
    net = tf.compat.v1.layers.conv2d(features, 32, 5, padding="same", activation=tf.nn.relu)
    net = tf.compat.v1.layers.max_pooling2d(net, 2, 2)
    net = tf.compat.v1.layers.conv2d(net, 64, 5, padding="same", activation=tf.nn.relu)
    net = tf.compat.v1.layers.max_pooling2d(net, 2, 2)
    net = tf.compat.v1.layers.dense(tf.reshape(net, [-1, 7 * 7 * 64]), 512, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, 10)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(640, 28, 28, 1)).astype(np.float32)
    y = rng.randint(0, 10, size=640).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64, drop_remainder=True)


class Timer(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.times = []

    def after_run(self, run_context, run_values):
        self.times.append(time.perf_counter())


timer = Timer()
config = NPURunConfig(precision_mode=precision_mode, save_checkpoints_steps=10 ** 6, log_step_count_steps=10 ** 6,
                      model_dir=sys.argv[3])
NPUEstimator(model_fn, config=config).train(input_fn, steps=steps, hooks=[timer])
print("steps_per_s", (len(timer.times) - 10) / (timer.times[-1] - timer.times[9]))
'''


def _npurun_run(args) -> None:
    """LeNet-style NPUEstimator script under `npurun run`: float32 vs allow_mix_precision, default and forced."""
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, "lenet_estimator.py")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(NPURUN_RUN_SCRIPT)
        runs = [("float32 (None)", "None", "0")] + [("allow_mix_precision, default", "allow_mix_precision", "0")]
        results: dict = {}
        for _ in range(args.rounds):
            for label, mode, forced in runs:
                results.setdefault(label, []).append(_timed_script(script, mode, forced, args.run_steps, work))
        forced_steps = max(20, args.run_steps // 4)  # forced fp16 convolutions are slow on a CPU
        results["allow_mix_precision, forced"] = [_timed_script(script, "allow_mix_precision", "1", forced_steps, work)]
    base = max(results["float32 (None)"])
    print(f"\n`npurun run` of a LeNet-style NPUEstimator script (batch 64; {args.run_steps} steps, timed from "
          f"step 10; float32 and default alternating, {args.rounds} runs each, best shown; forced: 1 run)\n")
    median_base = statistics.median(results["float32 (None)"])
    print("| precision_mode | steps/s (each run) | best | best vs float32 | median vs float32 |")
    print("|---|---|---|---|---|")
    for label, values in results.items():
        print(f"| {label} | {', '.join(f'{v:.2f}' for v in values)} | {max(values):.2f} | {max(values) / base:.2f}x "
              f"| {statistics.median(values) / median_base:.2f}x |")


def _timed_script(script, mode, forced, steps, work) -> float:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="-1", **{FORCE_ENV: forced})
    model_dir = os.path.join(work, f"model_{mode}_{forced}_{time.time_ns()}")
    proc = subprocess.run([sys.executable, "-m", "npurun.compat", "run", script, mode, str(steps), model_dir],
                          env=env, capture_output=True, text=True, cwd=work)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("steps_per_s")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"npurun run {mode} failed:\n{proc.stderr[-3000:]}")
    return float(lines[-1].split()[1])


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _table(result, models, title) -> None:
    by_key = {tuple(case["key"]): case for case in result["cases"]}
    print(f"\n{title} (oneDNN {'on' if result['onednn'] else 'off'})\n")
    print("| model | precision_mode | default: dtype | steps/s | vs float32 | forced: dtype | steps/s | vs float32 |")
    print("|---|---|---|---|---|---|---|---|")
    summaries = {}
    for model in models:
        base = by_key[(model, None, False)]
        print(f"| {model} | float32 (None) | {', '.join(base['dtypes'])} | {base['best']:.2f} | 1.00x | | | |")
        for mode in LOW_MODES:
            if (model, mode, False) not in by_key:
                continue
            cells = []
            for forced in (False, True):
                case = by_key[(model, mode, forced)]
                summaries[(mode, forced)] = case["decision"]
                cells += [", ".join(case["dtypes"]), f"{case['best']:.2f}", f"{case['best'] / base['best']:.2f}x"]
            print(f"| {model} | {mode} | " + " | ".join(cells) + " |")
    print("\nWhat the policy says here:")
    for (mode, forced), summary in summaries.items():
        print(f"- {mode}{' (forced)' if forced else ''}: {summary}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="*", choices=("mlp", "lenet"), default=["mlp", "lenet"],
                        help="models of the in-process table (none: only --npurun-run)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=20.0)
    parser.add_argument("--modes", nargs="+", choices=LOW_MODES, default=list(LOW_MODES))
    parser.add_argument("--npurun-run", action="store_true", help="also time a LeNet-style script under npurun run")
    parser.add_argument("--run-steps", type=int, default=100)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from npurun.precision import policy

    features = policy.cpu_features()
    print(f"CPU: {_cpu_name()}, {os.cpu_count()} cores. Features: {features.describe()}.")
    print(f"Each case: best of {args.rounds} rounds of {args.steps} steps (a round stops after "
          f"{args.max_seconds:g} s) after {args.warmup} warm-up steps; all cases side by side in one process.")
    cases = []
    for model in args.model:
        cases.append([model, None, False])
        cases += [[model, mode, forced] for mode in args.modes for forced in (False, True)]
    result = _run_child(cases, None, args) if cases else {"onednn": True}
    if cases:
        _table(result, args.model, "CPU, TensorFlow's default oneDNN setting for this CPU")
    if cases and not result["onednn"]:
        bf16 = [c for c in cases if c[1] in (None, "allow_mix_precision_bf16")]
        _table(_run_child(bf16, True, args), args.model, "CPU, bf16 cases again with TF_ENABLE_ONEDNN_OPTS=1")
    if args.npurun_run:
        _npurun_run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
