"""Op time by op type for one of bench/models.py's models: NPUEstimator (TF 2.21) or, run with the TF 2.15
venv's Python and `--kind classic`, the classic tf.estimator.Estimator on the same model_fn.

After `--warmup` host calls, `--traced` host calls run with RunOptions(trace_level=FULL_TRACE) (each
is `--ipl` steps); the step_stats of all devices are summed per executed kernel (the op type after
TensorFlow's oneDNN rewrite, e.g. _MklNativeConv2D). Prints one JSON line: op time per step, wall and
CPU ms per step of the traced runs (CPU: the process's own rusage), and per kernel its share of op
time, ms per step and count per step. Two processes' lines show whether both run the same kernels
the same number of times (they do on TF 2.21 and 2.15 for both models: docs/estimator.md).
Op times are wall-clock per op (under load they include waiting); the shares and counts are the
steadier figures. Tracing slows the run down: do not read rates from it.

Usage: python bench/tools/models_profile.py [--kind npurun|classic] [--model resnet20] [--precision fp32]
                                      [--ipl 1] [--warmup 10] [--traced 6]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for models.py
import models  # noqa: E402
from models_ab import cpu_seconds  # noqa: E402


def kernel_of(node) -> str:
    # timeline_label reads "node/name = KernelType(inputs...)"; memcpy-like entries have no " = ".
    label = node.timeline_label
    return label.split(" = ", 1)[1].split("(", 1)[0].strip() if " = " in label else node.node_name


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("npurun", "classic"), default="npurun")
    parser.add_argument("--model", choices=sorted(models.MODELS), default="resnet20")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--ipl", type=int, default=1, help="iterations_per_loop (npurun only)")
    parser.add_argument("--warmup", type=int, default=10, help="untraced host calls first")
    parser.add_argument("--traced", type=int, default=6, help="traced host calls")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    v1 = tf.compat.v1
    model_dir = tempfile.mkdtemp(prefix="npurun-bench-profile-")
    ipl = args.ipl if args.kind == "npurun" else 1
    if args.kind == "npurun":
        import npurun
        options = dict(save_checkpoints_steps=0, save_summary_steps=0, log_step_count_steps=None,
                       iterations_per_loop=ipl)
        if args.precision == "bf16":
            options["precision_mode"] = "allow_mix_precision_bf16"
        est = npurun.NPUEstimator(models.make_model_fn(args.model, npurun.EstimatorSpec), model_dir=model_dir,
                                  config=npurun.NPURunConfig(**options))
    else:
        config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
                                        save_summary_steps=None, log_step_count_steps=None)
        est = tf.estimator.Estimator(models.make_model_fn(args.model, tf.estimator.EstimatorSpec), config=config)
    op_us, count = collections.Counter(), collections.Counter()
    totals = dict(wall=0.0, cpu=0.0)

    class Tracer(v1.train.SessionRunHook):
        calls = 0

        def before_run(self, run_context):
            self.traced = args.warmup <= self.calls < args.warmup + args.traced
            self.start, self.cpu = time.perf_counter(), cpu_seconds()
            if self.traced:
                return v1.train.SessionRunArgs(None, options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE))
            return None

        def after_run(self, run_context, run_values):
            self.calls += 1
            if not self.traced:
                return
            totals["wall"] += time.perf_counter() - self.start
            totals["cpu"] += cpu_seconds() - self.cpu
            for device in run_values.run_metadata.step_stats.dev_stats:
                for node in device.node_stats:
                    op_us[kernel_of(node)] += node.op_end_rel_micros
                    count[kernel_of(node)] += 1

    est.train(lambda: models.dataset(args.model), steps=ipl * (args.warmup + args.traced), hooks=[Tracer()])
    steps = args.traced * ipl
    total = sum(op_us.values()) or 1
    print(json.dumps(dict(kind=args.kind, model=args.model, precision=args.precision, ipl=ipl, steps=steps,
                          op_ms_per_step=total / steps / 1000, wall_ms_per_step=1000 * totals["wall"] / steps,
                          cpu_ms_per_step=1000 * totals["cpu"] / steps, load=os.getloadavg()[0],
                          kernels=[[name, round(100 * us / total, 2), round(us / steps / 1000, 3), count[name] / steps]
                                   for name, us in op_us.most_common()])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
