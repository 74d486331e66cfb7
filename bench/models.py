"""Real models: NPUEstimator vs the classic tf.estimator (TF 2.15) vs Keras 3 model.fit, examples/s.

Models (the same architecture for every contender):
- resnet20: ResNet-20 (3 stages of 3 basic blocks, 16/32/64 filters, batch norm, 1x1 projection
  shortcuts), CIFAR shapes 32x32x3, 10 classes, batch 128, SGD momentum 0.9 (lr 0.1).
- transformer: a Transformer encoder, 2 post-LN layers, d_model 128, 4 heads, FFN 512, sequence
  128, vocabulary 1000, learned positions, mean pool, 10 classes, batch 64, Adam (lr 1e-3).

Contenders, each in a fresh process (`--worker`):
- npurun: NPUEstimator.train with one model_fn (`model_fn` below, tf.compat.v1 variables and tf.nn
  ops, so the same function runs under TF 2.15 and 2.21), as "ipl=1" (default config), "ipl=50"
  (a device loop) and "ipl=50 xla" (jit_compile="true", which on a CPU compiles each step).
- classic: tf.estimator.Estimator (TF 2.15 + tensorflow-estimator, venv at
  ~/.cache/npurun-bench/tf215, made by tests/compat/tf215_env.py) with the same model_fn.
- keras: the same architecture in Keras 3 (TF 2.21), model.fit with steps_per_execution=50,
  with and without jit_compile.
bf16: npurun precision_mode="allow_mix_precision_bf16", Keras "mixed_bfloat16" (the classic
Estimator has no bf16 switch: not run).

Same tf.data input everywhere: 1024 random examples in memory, repeat, batch, prefetch. Checkpoints,
summaries and step logging off. Timing: the steps after `--warmup` steps (graph building, session
start, XLA compilation excluded), to the end of the run; Keras: a first fit of `--warmup` steps,
then a timed fit of `--steps`. Each row also gives the worker's CPU time per example over the
same steps (time.process_time: every thread of the process) and the load average at its end. Contenders interleave for `--repeats` rounds; each cell is the best
round (other load only slows a run down). Peak RSS: the worker's ru_maxrss.

Usage: python bench/models.py [--quick] [--models resnet20,transformer] [--precisions fp32,bf16]
                              [--steps 100] [--warmup 50] [--repeats 2] [--gpu] [--save r1.json]
       python bench/models.py --load r1.json r2.json   (the best of saved runs, as one table)
`--quick`: a smoke run (tiny step counts, one round). `--gpu`: the GPU variants; this machine has
none, so they print "no GPU" and exit 0.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
LOOP = 50
MODELS = {"resnet20": dict(batch=128, shape=(32, 32, 3)), "transformer": dict(batch=64, seq=128, vocab=1000)}
CLASSES = 10
N_EXAMPLES = 1024


# --------------------------------------------------------------------------- data

def arrays(model: str):
    rng = np.random.RandomState(0)
    if model == "resnet20":
        x = rng.rand(N_EXAMPLES, *MODELS[model]["shape"]).astype("float32")
    else:
        x = rng.randint(0, MODELS[model]["vocab"], (N_EXAMPLES, MODELS[model]["seq"])).astype("int32")
    return x, rng.randint(0, CLASSES, N_EXAMPLES).astype("int32")


def dataset(model: str):
    import tensorflow as tf
    x, y = arrays(model)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
        MODELS[model]["batch"], drop_remainder=True).prefetch(4)


# --------------------------------------------------------------------------- the model_fn (TF 2.15 and 2.21)

def _var(name, shape, init=None):
    import tensorflow as tf
    v1 = tf.compat.v1
    return v1.get_variable(name, shape, initializer=init or v1.glorot_uniform_initializer())


def _conv_bn(x, filters, stride, name, relu=True, kernel=3):
    import tensorflow as tf
    v1 = tf.compat.v1
    w = _var(name + "/kernel", [kernel, kernel, x.shape[-1], filters], v1.variance_scaling_initializer(2.0))
    h = tf.nn.conv2d(x, w, stride, "SAME")
    gamma = _var(name + "/gamma", [filters], v1.ones_initializer())
    beta = _var(name + "/beta", [filters], v1.zeros_initializer())
    h, _, _ = v1.nn.fused_batch_norm(h, gamma, beta, is_training=True)
    return tf.nn.relu(h) if relu else h


def resnet20_logits(x):
    import tensorflow as tf
    h = _conv_bn(x, 16, 1, "stem")
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(3):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"s{stage}b{block}"
            out = _conv_bn(h, filters, stride, name + "/c1")
            out = _conv_bn(out, filters, 1, name + "/c2", relu=False)
            short = h if stride == 1 and h.shape[-1] == filters else \
                _conv_bn(h, filters, stride, name + "/proj", relu=False, kernel=1)
            h = tf.nn.relu(out + short)
    h = tf.reduce_mean(h, [1, 2])
    return tf.matmul(h, _var("fc/w", [64, CLASSES])) + _var("fc/b", [CLASSES], tf.compat.v1.zeros_initializer())


def _dense(x, units, name):
    import tensorflow as tf
    w = _var(name + "/w", [x.shape[-1], units])
    b = _var(name + "/b", [units], tf.compat.v1.zeros_initializer())
    return tf.tensordot(x, w, 1) + b


def _layer_norm(x, name):
    import tensorflow as tf
    v1 = tf.compat.v1
    mean, var = tf.nn.moments(x, [-1], keepdims=True)
    gamma = _var(name + "/gamma", [x.shape[-1]], v1.ones_initializer())
    beta = _var(name + "/beta", [x.shape[-1]], v1.zeros_initializer())
    return (x - mean) * tf.math.rsqrt(var + 1e-6) * gamma + beta


def transformer_logits(tokens, d=128, heads=4, ffn=512, layers=2):
    import tensorflow as tf
    seq = tokens.shape[1]
    h = tf.nn.embedding_lookup(_var("embed", [MODELS["transformer"]["vocab"], d]), tokens)
    h = h + _var("pos", [seq, d])
    for k in range(layers):
        q, kk, v = (tf.reshape(_dense(h, d, f"l{k}/{n}"), [-1, seq, heads, d // heads]) for n in "qkv")
        scores = tf.einsum("bqhd,bkhd->bhqk", q, kk) / float(np.sqrt(d // heads))
        att = tf.einsum("bhqk,bkhd->bqhd", tf.nn.softmax(scores), v)
        h = _layer_norm(h + _dense(tf.reshape(att, [-1, seq, d]), d, f"l{k}/o"), f"l{k}/ln1")
        h = _layer_norm(h + _dense(tf.nn.relu(_dense(h, ffn, f"l{k}/f1")), d, f"l{k}/f2"), f"l{k}/ln2")
    return _dense(tf.reduce_mean(h, 1), CLASSES, "head")


def make_model_fn(model: str, spec_class):
    """model_fn(features, labels, mode) for `model`, returning `spec_class` (npurun's or tf.estimator's)."""
    def model_fn(features, labels, mode):
        import tensorflow as tf
        v1 = tf.compat.v1
        logits = resnet20_logits(features) if model == "resnet20" else transformer_logits(features)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=tf.cast(logits, tf.float32)))
        optimizer = v1.train.MomentumOptimizer(0.1, 0.9) if model == "resnet20" else v1.train.AdamOptimizer(1e-3)
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return spec_class(mode, loss=loss, train_op=train_op)
    return model_fn


class _Timer:
    """Wall time from the run that reaches `warmup` steps to the last run (steps_per_run steps each)."""

    def __init__(self, warmup: int, steps_per_run: int):
        self.warmup, self.per_run, self.done, self.t0, self.t1, self.at0 = warmup, steps_per_run, 0, None, None, 0
        self.cpu0 = self.cpu1 = None

    def hook(self):
        import tensorflow as tf
        timer = self

        class Hook(tf.compat.v1.train.SessionRunHook):
            def after_run(self, run_context, run_values):
                timer.done += timer.per_run
                now, cpu = time.perf_counter(), time.process_time()
                if timer.t0 is None and timer.done >= timer.warmup:
                    timer.t0, timer.at0, timer.cpu0 = now, timer.done, cpu
                timer.t1, timer.cpu1 = now, cpu
        return Hook()

    def result(self, batch: int) -> dict:
        examples = (self.done - self.at0) * batch
        return dict(rate=examples / (self.t1 - self.t0), cpu_ms=1000 * (self.cpu1 - self.cpu0) / examples)


# --------------------------------------------------------------------------- workers

def run_estimator(kind: str, model: str, variant: str, precision: str, warmup: int, steps: int) -> dict:
    import tensorflow as tf
    model_dir = tempfile.mkdtemp(prefix="npurun-bench-models-")
    ipl = LOOP if variant.startswith("ipl=50") else 1
    if kind == "npurun":
        import npurun
        options = dict(save_checkpoints_steps=0, save_summary_steps=0, log_step_count_steps=None,
                       iterations_per_loop=ipl)
        if "xla" in variant:
            options["jit_compile"] = "true"
        if precision == "bf16":
            options["precision_mode"] = "allow_mix_precision_bf16"
        est = npurun.NPUEstimator(make_model_fn(model, npurun.EstimatorSpec), model_dir=model_dir,
                                  config=npurun.NPURunConfig(**options))
    else:
        config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
                                        save_summary_steps=None, log_step_count_steps=None)
        est = tf.estimator.Estimator(make_model_fn(model, tf.estimator.EstimatorSpec), config=config)
    timer = _Timer(warmup, ipl)
    est.train(lambda: dataset(model), steps=warmup + steps, hooks=[timer.hook()])
    return timer.result(MODELS[model]["batch"])


def keras_model(model: str):
    import keras
    from keras import layers
    if model == "resnet20":
        inputs = keras.Input(MODELS[model]["shape"])

        def conv_bn(x, filters, stride, relu=True, kernel=3):
            x = layers.Conv2D(filters, kernel, stride, padding="same", use_bias=False,
                              kernel_initializer="he_normal")(x)
            x = layers.BatchNormalization(epsilon=1e-3)(x)
            return layers.ReLU()(x) if relu else x
        h = conv_bn(inputs, 16, 1)
        for stage, filters in enumerate((16, 32, 64)):
            for block in range(3):
                stride = 2 if stage > 0 and block == 0 else 1
                out = conv_bn(conv_bn(h, filters, stride), filters, 1, relu=False)
                short = h if stride == 1 and h.shape[-1] == filters else conv_bn(h, filters, stride, False, 1)
                h = layers.ReLU()(layers.Add()([out, short]))
        outputs = layers.Dense(CLASSES, dtype="float32")(layers.GlobalAveragePooling2D()(h))
        return keras.Model(inputs, outputs), keras.optimizers.SGD(0.1, momentum=0.9)
    seq, d = MODELS[model]["seq"], 128
    inputs = keras.Input((seq,), dtype="int32")
    h = layers.Embedding(MODELS[model]["vocab"], d)(inputs)
    positions = layers.Embedding(seq, d)(keras.ops.arange(seq)[None, :])
    h = h + positions
    for _ in range(2):
        att = layers.MultiHeadAttention(4, d // 4)(h, h)
        h = layers.LayerNormalization(epsilon=1e-6)(h + att)
        ff = layers.Dense(d)(layers.Dense(512, activation="relu")(h))
        h = layers.LayerNormalization(epsilon=1e-6)(h + ff)
    outputs = layers.Dense(CLASSES, dtype="float32")(layers.GlobalAveragePooling1D()(h))
    return keras.Model(inputs, outputs), keras.optimizers.Adam(1e-3)


def run_keras(model: str, variant: str, precision: str, warmup: int, steps: int) -> dict:
    import keras
    if precision == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    net, optimizer = keras_model(model)
    net.compile(optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                steps_per_execution=LOOP, jit_compile="jit" in variant)
    data = dataset(model)
    net.fit(data, steps_per_epoch=max(warmup, LOOP), epochs=1, verbose=0)  # tracing, compilation, warm-up
    start, cpu = time.perf_counter(), time.process_time()
    net.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
    examples = steps * MODELS[model]["batch"]
    return dict(rate=examples / (time.perf_counter() - start), cpu_ms=1000 * (time.process_time() - cpu) / examples)


def worker(args) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.kind == "keras":
        result = run_keras(args.model, args.variant, args.precision, args.warmup, args.steps)
    else:
        result = run_estimator(args.kind, args.model, args.variant, args.precision, args.warmup, args.steps)
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["load"] = os.getloadavg()[0]
    print("RESULT " + json.dumps(result))
    return 0


# --------------------------------------------------------------------------- the driver

def cpu_features() -> dict:
    flags, name = set(), "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name") and name == "unknown CPU":
                    name = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return dict(name=name, cores=os.cpu_count(),
                **{f: f in flags for f in ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile")})


def classic_python():
    """The TF 2.15 venv's Python, or (None, why)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
    try:
        import tf215_env
        return str(tf215_env.ensure()), None
    except (ImportError, RuntimeError, OSError) as err:
        return None, f"no TF 2.15 venv ({str(err).splitlines()[0]})"


def contenders(models, precisions):
    for model in models:
        for precision in precisions:
            if precision == "fp32":
                variants = [("npurun", "ipl=1"), ("npurun", "ipl=50"), ("npurun", "ipl=50 xla"),
                            ("keras", "spe=50"), ("keras", "spe=50 jit"), ("classic", "default")]
            else:  # bf16: the device loop and Keras' loop (as the issue's table)
                variants = [("npurun", "ipl=50"), ("keras", "spe=50")]
            for kind, variant in variants:
                yield model, precision, kind, variant


def run_one(python, model, precision, kind, variant, warmup, steps, timeout):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    if kind == "npurun":
        env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
    command = [python, HERE, "--worker", kind, "--model", model, "--variant", variant, "--precision", precision,
               "--warmup", str(warmup), "--steps", str(steps)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:]), None
    tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return None, tail[:160]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=("npurun", "classic", "keras"), help=argparse.SUPPRESS)
    parser.add_argument("--model", default="resnet20", help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="ipl=1", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="fp32", help=argparse.SUPPRESS)
    parser.add_argument("--models", default="resnet20,transformer")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--steps", type=int, default=100, help="timed steps (a multiple of 50)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed steps first (a multiple of 50)")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved rounds; the best is shown")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per contender run")
    parser.add_argument("--only", default="", help="comma list of contender kinds to run (npurun,keras,classic)")
    parser.add_argument("--skip-xla", action="store_true", help="leave out the XLA variants (their compilation "
                        "takes minutes on a loaded 2-core machine)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 50 steps after 50, one round, fp32")
    parser.add_argument("--gpu", action="store_true", help="the GPU variants (need a GPU)")
    parser.add_argument("--save", help="also write this run's results to a JSON file")
    parser.add_argument("--load", nargs="+", help="render the best of saved JSON results (no run)")
    args = parser.parse_args(argv)
    if args.worker:
        args.kind = args.worker
        return worker(args)
    if args.gpu:
        if not os.path.isdir("/proc/driver/nvidia/gpus") or not os.listdir("/proc/driver/nvidia/gpus"):
            print("no GPU")
            return 0
    if args.load:
        return render_saved(args.load)
    if args.quick:
        args.steps, args.warmup, args.repeats, args.precisions = 50, 50, 1, "fp32"
    if args.steps % LOOP or args.warmup % LOOP or args.steps <= 0 or args.warmup <= 0:
        parser.error(f"--steps and --warmup must be positive multiples of {LOOP} (the device loop's length)")
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {unknown}; known: {sorted(MODELS)}")
    precisions = [p for p in args.precisions.split(",") if p]
    if any(p not in ("fp32", "bf16") for p in precisions):
        parser.error("--precisions: fp32 and/or bf16")
    only = set(filter(None, args.only.split(",")))
    classic, why_not = classic_python()
    plan = [c for c in contenders(models, precisions) if (not only or c[2] in only)
            and not (args.skip_xla and ("xla" in c[3] or "jit" in c[3]))]
    started = time.time()
    load_before = os.getloadavg()
    results = {c: [] for c in plan}
    errors = {}
    for round_ in range(args.repeats):
        for contender in plan:
            model, precision, kind, variant = contender
            if kind == "classic" and classic is None:
                errors[contender] = why_not
                continue
            python = classic if kind == "classic" else sys.executable
            result, error = run_one(python, model, precision, kind, variant, args.warmup, args.steps, args.timeout)
            if result is None:
                errors[contender] = error
            else:
                results[contender].append(result)
            print(f"# round {round_ + 1}: {model} {precision} {kind} {variant}: "
                  f"{'%.1f ex/s' % result['rate'] if result else error}", file=sys.stderr, flush=True)
    load_after, seconds = os.getloadavg(), time.time() - started
    if args.save:
        with open(args.save, "w", encoding="utf-8") as handle:
            json.dump(dict(results=[[list(c), runs] for c, runs in results.items()],
                           errors=[[list(c), e] for c, e in errors.items()], steps=args.steps, warmup=args.warmup,
                           repeats=args.repeats, load=[load_before[0], load_after[0]], seconds=seconds), handle)
    print(render(results, errors, args.steps, args.warmup, args.repeats, [load_before[0], load_after[0]], seconds))
    return 0


def render_saved(paths) -> int:
    """The table of several saved runs: each contender's best over all of them."""
    results, errors, loads, seconds, repeats = {}, {}, [], 0.0, 0
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
        for contender, runs in saved["results"]:
            results.setdefault(tuple(contender), []).extend(runs)
        for contender, error in saved["errors"]:
            errors[tuple(contender)] = error
        loads += saved["load"]
        seconds += saved["seconds"]
        repeats += saved["repeats"]
    print(render(results, errors, saved["steps"], saved["warmup"], repeats, [min(loads), max(loads)], seconds,
                 load_words=("min", "max")))
    return 0


def render(results, errors, steps, warmup, repeats, loads, seconds, load_words=("before", "after")) -> str:
    features = cpu_features()
    flags = ", ".join(f"{f} {'yes' if features[f] else 'no'}" for f in ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile"))
    lines = [f"CPU: {features['name']}, {features['cores']} cores; {flags}",
             f"load average (1 min) {load_words[0]} {loads[0]:.1f}, {load_words[1]} {loads[1]:.1f}; "
             f"{steps} timed steps after {warmup}, best of {repeats} interleaved round(s); "
             f"{seconds / 60:.1f} min", "",
             "| model | precision | contender | examples/s | CPU ms / example | load (1 min) | vs Keras fit (best) "
             "| vs classic Estimator | peak RSS (MB) |",
             "|---|---|---|---|---|---|---|---|---|"]
    best = {c: max(r["rate"] for r in runs) for c, runs in results.items() if runs}
    # CPU time per example of each contender's best round (None for results saved without it).
    cpu_of = {c: max(runs, key=lambda r: r["rate"]).get("cpu_ms") for c, runs in results.items() if runs}

    def ratio(contender, other):
        text = f"{best[contender] / best[other]:.2f}x"
        if cpu_of.get(contender) and cpu_of.get(other):
            text += f" (CPU {cpu_of[other] / cpu_of[contender]:.2f}x)"
        return text
    for contender in results:
        model, precision, kind, variant = contender
        keras = max([c for c in best if c[:2] == (model, precision) and c[2] == "keras"], key=best.get, default=None)
        classic = (model, "fp32", "classic", "default") if (model, "fp32", "classic", "default") in best else None
        name = {"npurun": "npurun NPUEstimator", "keras": "Keras 3 fit", "classic": "classic tf.estimator 2.15"}[kind]
        if contender not in best:
            lines.append(f"| {model} | {precision} | {name} {variant} | n/a ({errors.get(contender, '')}) | | | | | |")
            continue
        rate = best[contender]
        top = max(results[contender], key=lambda r: r["rate"])  # the best round's CPU time and load
        cpu = f"{top['cpu_ms']:.2f}" if top.get("cpu_ms") is not None else "n/a"
        load = f"{top['load']:.1f}" if top.get("load") is not None else "n/a"
        rss_values = [r["rss_mb"] for r in results[contender] if r.get("rss_mb") is not None]
        rss = f"{max(rss_values):.0f}" if rss_values else "n/a"
        vs_keras = ratio(contender, keras) if keras else "n/a"
        vs_classic = ratio(contender, classic) if classic else "n/a"
        lines.append(f"| {model} | {precision} | {name} {variant} | {rate:.0f} | {cpu} | {load} | {vs_keras} "
                     f"| {vs_classic} | {rss} |")
    lines.append("")
    lines.append("vs classic Estimator: against its float32 run (it has no bf16 switch); vs Keras fit: against the "
                 "faster of spe=50 with and without jit for the same model and precision. CPU ms / example: the "
                 "process's CPU time (all threads) over the timed steps per example, and the load at the end of "
                 "that run, both of the round shown; under load CPU time is the steadier figure, and '(CPU 1.10x)' is the "
                 "ratio of CPU time per example (the other's over this row's).")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
