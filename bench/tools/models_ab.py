"""A/B/A/B of session and tf.data settings on bench/models.py's models, in one process.

For each round, every variant trains a fresh NPUEstimator (or, with `--kind classic` inside the TF
2.15 venv, a classic tf.estimator.Estimator) on the same model_fn and input as bench/models.py, and
prints one JSON line: examples/s and CPU ms per example over the timed steps (the process's own
rusage, user + system, all threads) and the 1-minute load at the end. Variants interleave
(A/B/C, A/B/C, ...), so load from other work on the machine hits them alike; on a loaded machine
compare the CPU ms per example, and several rounds.

Settings that are per session (grappler, tf.data options, place_pruned_graph) can be compared in
one process. Thread-pool sizes are fixed by the process's first session unless
use_per_session_threads is set, so compare "threads" variants in separate runs of this script.

A variant is NAME or NAME:JSON, JSON keys:
  ipl          iterations_per_loop (npurun; default 50)
  grappler     {RewriterConfig field: "on" | "off" | value}, e.g. {"remapping": "off"},
               {"disable_meta_optimizer": true}, {"meta_optimizer_iterations": "ONE"}
  threads      [intra_op, inter_op]
  per_session  true: use_per_session_threads
  pruned       true: graph_options.place_pruned_graph
  data         {"private": N (threading.private_threadpool_size), "autotune": bool,
                "opt": bool (experimental_optimization.apply_default_optimizations),
                "prefetch": N or null (the input's prefetch; bench/models.py uses 4)}
  jit          true: jit_compile="true" (npurun)

Usage: python bench/tools/models_ab.py [--kind npurun|classic] [--model resnet20] [--precision fp32]
           [--warmup 10] [--steps 30] [--rounds 2] VARIANT [VARIANT ...]
Example: python bench/tools/models_ab.py base:'{"ipl":10}' remap_off:'{"ipl":10,"grappler":{"remapping":"off"}}'
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for models.py
import models  # noqa: E402  (the same model_fn, arrays and shapes)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def parse_variant(text: str):
    name, _, spec = text.partition(":")
    return name, (json.loads(spec) if spec else {})


def session_config(tf, spec: dict, classic: bool):
    from tensorflow.core.protobuf import rewriter_config_pb2
    rewriter = rewriter_config_pb2.RewriterConfig
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    rewrite = config.graph_options.rewrite_options
    if classic:  # tf.estimator's own default session config (run_config.get_default_session_config)
        rewrite.meta_optimizer_iterations = rewriter.ONE
    for field, value in spec.get("grappler", {}).items():
        if value in ("on", "off"):
            setattr(rewrite, field, rewriter.ON if value == "on" else rewriter.OFF)
        elif field == "meta_optimizer_iterations":
            rewrite.meta_optimizer_iterations = getattr(rewriter, value)
        else:
            setattr(rewrite, field, value)
    if "threads" in spec:
        config.intra_op_parallelism_threads, config.inter_op_parallelism_threads = spec["threads"]
    if spec.get("per_session"):
        config.use_per_session_threads = True
    if spec.get("pruned"):
        config.graph_options.place_pruned_graph = True
    return config


def input_fn_for(model: str, spec: dict):
    def input_fn():
        import tensorflow as tf
        x, y = models.arrays(model)
        data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(models.MODELS[model]["batch"],
                                                                          drop_remainder=True)
        settings = spec.get("data", {})
        if settings.get("prefetch", 4) is not None:
            data = data.prefetch(settings.get("prefetch", 4))
        if settings:
            options = tf.data.Options()
            if "private" in settings:
                options.threading.private_threadpool_size = settings["private"]
            if "autotune" in settings:
                options.autotune.enabled = settings["autotune"]
            if "opt" in settings:
                options.experimental_optimization.apply_default_optimizations = settings["opt"]
            data = data.with_options(options)
        return data
    return input_fn


def run_variant(kind: str, model: str, precision: str, spec: dict, warmup: int, steps: int) -> dict:
    import tensorflow as tf
    model_dir = tempfile.mkdtemp(prefix="npurun-bench-ab-")
    ipl = spec.get("ipl", models.LOOP) if kind == "npurun" else 1
    config_proto = session_config(tf, spec, kind == "classic")
    if kind == "npurun":
        import npurun
        options = dict(save_checkpoints_steps=0, save_summary_steps=0, log_step_count_steps=None,
                       iterations_per_loop=ipl, session_config=config_proto)
        if spec.get("jit"):
            options["jit_compile"] = "true"
        if precision == "bf16":
            options["precision_mode"] = "allow_mix_precision_bf16"
        est = npurun.NPUEstimator(models.make_model_fn(model, npurun.EstimatorSpec), model_dir=model_dir,
                                  config=npurun.NPURunConfig(**options))
    else:
        config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
                                        save_summary_steps=None, log_step_count_steps=None,
                                        session_config=config_proto)
        est = tf.estimator.Estimator(models.make_model_fn(model, tf.estimator.EstimatorSpec), config=config)
    state = dict(done=0, t0=None)

    class Timer(tf.compat.v1.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            state["done"] += ipl
            now, cpu = time.perf_counter(), cpu_seconds()
            if state["t0"] is None and state["done"] >= warmup:
                state.update(t0=now, cpu0=cpu, at0=state["done"])
            state.update(t1=now, cpu1=cpu)

    est.train(input_fn_for(model, spec), steps=warmup + steps, hooks=[Timer()])
    examples = (state["done"] - state["at0"]) * models.MODELS[model]["batch"]
    return dict(rate=examples / (state["t1"] - state["t0"]), cpu_ms=1000 * (state["cpu1"] - state["cpu0"]) / examples,
                load=os.getloadavg()[0])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("npurun", "classic"), default="npurun")
    parser.add_argument("--model", choices=sorted(models.MODELS), default="resnet20")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps (a multiple of each variant's ipl)")
    parser.add_argument("--steps", type=int, default=30, help="timed steps (a multiple of each variant's ipl)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("variants", nargs="+")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    variants = [parse_variant(v) for v in args.variants]
    for round_ in range(args.rounds):
        for name, spec in variants:
            result = run_variant(args.kind, args.model, args.precision, spec, args.warmup, args.steps)
            result.update(name=name, round=round_, kind=args.kind, model=args.model, precision=args.precision)
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
