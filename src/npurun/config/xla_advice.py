"""XLA on a CPU: what a device loop compiles, and the measured advice per model kind (plain Python).

Read by runtime/compilation.py (which applies the rule) and by `npurun explain` and the docs (which
say it); no TensorFlow here, so `npurun explain` stays fast.

The rule for a device loop (iterations_per_loop > 1) under whole-step XLA (jit_compile compiles,
mix_compile_mode=False), chosen by `NPURUN_XLA_DEVICE_LOOP` (an npurun extension, process
environment): "auto" (default) = "step" on a CPU, "loop" on a GPU.
  "loop": the whole device loop is one XLA computation over N stacked batches.
  "step": the loop is the TensorFlow executor's (get_next inside it) and each iteration's step is
          one XLA computation.
Why a CPU compiles the step: inside a whole-loop computation XLA's CPU backend emits the gradient
convolutions (Conv2DBackpropFilter / Conv2DBackpropInput) as generic elemental loops (an XLA dump
shows `*Conv2DBackpropFilter*_elemental_kernel_module`) instead of transposing them into the
canonical form its Eigen convolution kernel runs, which it does for the same convolutions at a
computation's top level. Measured numbers: MEASURED below and docs/compilation.md.
"""
from __future__ import annotations

import os
from typing import Mapping

LOOP_ENV = "NPURUN_XLA_DEVICE_LOOP"
LOOP_VALUES = ("auto", "step", "loop")

# Measured on this project's 2-core AMD EPYC (Zen 4, AVX-512 + AVX512_BF16, no AMX), TensorFlow 2.21
# CPU wheel, float32 training, ms per step (best of interleaved runs; docs/compilation.md).
# Two convolutions (batch 32, 16x16x3), device loop of 5: whole loop as one XLA computation 94 ms,
# each step compiled inside the loop 6.6 ms, no XLA 3.1 ms.
CPU_CONV_LOOP_SLOWDOWN = 14.0  # whole-loop XLA / step-compiled XLA, the two-convolution net above

# Per model kind on a CPU: (advice, why). Figures: the two-convolution net above, bench/compile_cache.py
# --modes (docs/compilation.md: a CNN step 257 ms with XLA against 175 ms without), issue 28's quiet
# 2-core Zen 4 run (Transformer encoder 342 ex/s with XLA, 337 without) and bench/models.py (docs/estimator.md).
CPU_ADVICE = {
    "convnet": ("jit_compile='false' (the default 'auto' on a CPU)",
                "oneDNN's convolutions beat XLA's CPU code (a CNN step measured 1.5x slower with XLA); with "
                "XLA, a device loop compiles each step (a whole-loop computation runs convolution gradients "
                f"as generic loops, measured {CPU_CONV_LOOP_SLOWDOWN:.0f}x slower)"),
    "dense": ("jit_compile='false' or 'true' (within noise)",
              "a Transformer encoder measured 342 against 337 examples/s; a tiny MLP in a device loop gains "
              "from 'true' with NPURUN_XLA_DEVICE_LOOP=loop"),
}


def loop_setting(environ: Mapping[str, str] = os.environ) -> str:
    """NPURUN_XLA_DEVICE_LOOP's value ("auto" when unset); ValueError naming it for anything else."""
    value = environ.get(LOOP_ENV, "").strip().lower() or "auto"
    if value not in LOOP_VALUES:
        raise ValueError(f"environment variable {LOOP_ENV}={environ.get(LOOP_ENV)!r} is not understood: set it to "
                         f"'step' (each device-loop iteration's step is one XLA computation), 'loop' (the whole "
                         f"device loop is one), or 'auto' / unset (step on a CPU, loop on a GPU)")
    return value


def loop_rule(gpu: bool, environ: Mapping[str, str] = os.environ) -> str:
    """"step" or "loop": what one XLA computation holds in a device loop here (see module rules)."""
    setting = loop_setting(environ)
    if setting != "auto":
        return setting
    return "loop" if gpu else "step"


def summary_here(jit_compile: str, iterations: int, mix_compile_mode: bool, gpu: bool,
                 environ: Mapping[str, str] = os.environ) -> str:
    """One line for `npurun explain`'s jit_compile row: what XLA compiles here, and the advice."""
    if jit_compile == "false" or (jit_compile == "auto" and not gpu):
        what = "here: no XLA"
    elif mix_compile_mode:
        what = "here: XLA auto-clustering"
    elif iterations > 1:
        try:
            rule = loop_rule(gpu, environ)
        except ValueError as err:
            return f"here: unknown ({err})"
        what = (f"here: each device-loop step is one XLA computation inside TensorFlow's loop ({LOOP_ENV}={rule})"
                if rule == "step" else f"here: the whole device loop is one XLA computation ({LOOP_ENV}={rule})")
    else:
        what = "here: the whole step is one XLA computation"
    if gpu:
        return what
    advice = "; ".join(f"{kind}: {advice} ({why})" for kind, (advice, why) in CPU_ADVICE.items())
    return f"{what}; CPU advice, measured: {advice}"
