"""Training steps/s by precision_mode on a matmul-heavy model, in one run.

Model: a 4-layer 1024-wide ReLU MLP with a 10-way softmax cross-entropy head, batch 256, plain
SGD, random data generated in the graph (no input pipeline). Each case runs in its own Python
process because TensorFlow fixes oneDNN on/off when it starts (TF_ENABLE_ONEDNN_OPTS): the
sessions come from `build_plan(NPURunConfig(precision_mode=...).options, "train")`, so the bf16
case runs the real npurun contributor (grappler's `auto_mixed_precision_onednn_bfloat16`).
Cases:

- CPU float32 with TensorFlow's default oneDNN setting for this CPU;
- CPU float32 and allow_mix_precision_bf16, both with TF_ENABLE_ONEDNN_OPTS=1 (the ratio);
- CPU allow_mix_precision (fp16 on CPU: numerics check, not a speed mode), for reference;
- on a GPU: float32 vs allow_mix_precision (fp16); "no GPU" otherwise.

Each case times `--steps` steps after `--warmup` steps, best of `--rounds`; the table (markdown)
goes to stdout. Usage: python bench/precision.py [--steps 20] [--warmup 5] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

WIDTH, DEPTH, BATCH = 1024, 4, 256


def _case(precision_mode: str | None, device: str, steps: int, warmup: int, rounds: int) -> dict:
    """Runs in the child process: steps/s of one precision mode on one device."""
    import warnings

    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.precision.modes import onednn_enabled
    from npurun.runtime.plan import build_plan

    v1 = tf.compat.v1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = NPURunConfig(precision_mode=precision_mode, session_device_id=0)  # the CPU, or GPU 0
        plan = build_plan(config.options, "train")
    graph = tf.Graph()
    with graph.as_default(), tf.device(device):
        x = tf.random.normal([BATCH, WIDTH], seed=1)
        labels = tf.random.uniform([BATCH], 0, 10, dtype=tf.int32, seed=2)
        hidden = x
        for layer in range(DEPTH):
            w = v1.get_variable(f"w{layer}", [WIDTH, WIDTH], initializer=v1.glorot_uniform_initializer(seed=layer))
            b = v1.get_variable(f"b{layer}", [WIDTH], initializer=v1.zeros_initializer())
            hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(hidden, w), b))
        w_out = v1.get_variable("w_out", [WIDTH, 10], initializer=v1.glorot_uniform_initializer(seed=9))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                             logits=tf.matmul(hidden, w_out)))
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = v1.global_variables_initializer()
    best = 0.0
    with plan.environment():
        with v1.Session(graph=graph, config=plan.config_proto) as session:
            session.run(init)
            metadata = v1.RunMetadata()
            session.run(train, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
            matmul_dtypes = sorted({tf.as_dtype(node.attr["T"].type).name for part in metadata.partition_graphs
                                    for node in part.node if "MatMul" in node.op and "T" in node.attr})
            for _ in range(warmup):
                session.run(train)
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(steps):
                    session.run(train)
                best = max(best, steps / (time.perf_counter() - start))
    return {"steps_per_s": best, "matmul_dtypes": matmul_dtypes, "onednn": onednn_enabled()}


def _run_child(precision_mode, device, onednn, args) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if "CPU" in device:
        env["CUDA_VISIBLE_DEVICES"] = "-1"  # CPU cases see no GPU, so the plan targets the CPU
    if onednn is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    else:
        env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    request = json.dumps([precision_mode, device, args.steps, args.warmup, args.rounds])
    proc = subprocess.run([sys.executable, __file__, "--child", request], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"case {precision_mode} on {device} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _gpu_count() -> int:
    proc = subprocess.run([sys.executable, "-c", "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"],
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), capture_output=True, text=True)
    return int(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else 0


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_case(*json.loads(args.child))))
        return 0

    cases = [
        ("CPU float32, TensorFlow's default oneDNN setting", None, "/device:CPU:0", None),
        ("CPU float32, oneDNN on", None, "/device:CPU:0", True),
        ("CPU allow_mix_precision_bf16, oneDNN on", "allow_mix_precision_bf16", "/device:CPU:0", True),
        ("CPU allow_mix_precision (fp16 kernels on CPU)", "allow_mix_precision", "/device:CPU:0", None),
    ]
    gpus = _gpu_count()
    if gpus:
        cases += [("GPU float32", None, "/device:GPU:0", None),
                  ("GPU allow_mix_precision (fp16)", "allow_mix_precision", "/device:GPU:0", None)]
    results = {}
    print(f"Model: {DEPTH}x{WIDTH} ReLU MLP + softmax head, batch {BATCH}, SGD; {args.steps} steps x "
          f"best of {args.rounds} after {args.warmup} warm-up steps. CPU: {_cpu_name()}, {os.cpu_count()} cores.\n")
    print("| case | MatMul dtype | oneDNN | steps/s |")
    print("|---|---|---|---|")
    for label, mode, device, onednn in cases:
        result = results[label] = _run_child(mode, device, onednn, args)
        print(f"| {label} | {', '.join(result['matmul_dtypes'])} | {'on' if result['onednn'] else 'off'} "
              f"| {result['steps_per_s']:.2f} |", flush=True)
    bf16 = results["CPU allow_mix_precision_bf16, oneDNN on"]["steps_per_s"]
    fp32 = results["CPU float32, oneDNN on"]["steps_per_s"]
    print(f"\nCPU allow_mix_precision_bf16 / float32 (both oneDNN on): {bf16 / fp32:.2f}x")
    if gpus:
        ratio = results["GPU allow_mix_precision (fp16)"]["steps_per_s"] / results["GPU float32"]["steps_per_s"]
        print(f"GPU allow_mix_precision (fp16) / float32: {ratio:.2f}x")
    else:
        print("GPU allow_mix_precision (fp16) / float32: no GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
