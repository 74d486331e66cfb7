"""What a low-precision precision_mode does on this machine, decided in plain Python (no TensorFlow).

The Ascend NPU computes fp16 faster than fp32; CPUs mostly do not. A script written for the NPU
with `precision_mode='allow_mix_precision'` would run about 25x slower on a laptop CPU with real
float16 kernels, so on a CPU a low-precision mode lowers ops only where that was MEASURED to cost
at most `SLOWDOWN_LIMIT` (1.2x) of float32 training time (`MEASURED_SPEEDUP`, per dtype and the
CPU's hardware for it). Elsewhere the mode runs in float32 and npurun warns once per process
and mode, saying why and how to force the real low-precision graph.

`NPURUN_FORCE_LOW_PRECISION=1` (an npurun extension, not an NPURunConfig option) forces the
low-precision graph on any CPU, for people who check numerics (overflow, loss-scale behaviour,
dump comparison). On a GPU the fp16 modes always run fp16 automatic mixed precision.

`NPURUN_FP16_AS_BF16=1` (an npurun extension, process environment) substitutes bfloat16 for
float16 in the fp16 modes (`allow_mix_precision`, `allow_mix_precision_fp16`, `force_fp16`) on a
CPU whose bf16 was measured faster than float32 (`FAST_BF16`: AMX-BF16, or AVX512_BF16 on AMD):
they then run TensorFlow's oneDNN bf16 rewrite, as `allow_mix_precision_bf16` does (force_fp16's
"every op" widening is not carried over: bf16 goes where TensorFlow's bf16 lists allow), with one
warning per process and mode naming the substitution. Elsewhere (GPUs, CPUs with slow bf16) the
switch changes nothing, and `npurun explain` says why. Scripts written for the NPU's fp16 modes
get the CPU's fast low precision without editing their configuration; bf16 has float32's range,
so fp16 loss scaling is not needed (it still runs if configured).

This module is imported by `npurun explain`, which must not import TensorFlow: keep it TF-free.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

FORCE_ENV = "NPURUN_FORCE_LOW_PRECISION"
SUBSTITUTE_ENV = "NPURUN_FP16_AS_BF16"
FAST_BF16 = 1.0  # bf16 counts as fast on a CPU measured at least this much faster than float32
SLOWDOWN_LIMIT = 1.2  # the default may make training at most this much slower than float32
CPUINFO = "/proc/cpuinfo"

DEFAULT_MODE = "allow_fp32_to_fp16"
LOW_DTYPE = {
    "allow_mix_precision": "float16",
    "allow_mix_precision_fp16": "float16",
    "force_fp16": "float16",
    "allow_mix_precision_bf16": "bfloat16",
}
FLOAT32_MODES = ("allow_fp32_to_fp16", "force_fp32", "must_keep_origin_dtype")

# Training steps/s in the low dtype / steps/s in float32 on CPUs, TensorFlow 2.21 CPU wheel, the
# worst case measured per (dtype, the CPU's best hardware for it, CPU vendor or None for any).
# None: not measured, so not trusted to be within the limit. Sources: issue 17 and
# bench/precision.py (tables in docs/precision.md). AVX512_BF16 without AMX differs by vendor:
# AMD Zen 4 runs oneDNN's bf16 kernels about 2-3x faster than float32, an Intel Xeon measured 0.68x.
MEASURED_SPEEDUP = {
    ("bfloat16", "amx_bf16", None): 2.5,               # Intel Xeon with AMX (Sapphire Rapids class)
    ("bfloat16", "avx512_bf16", "AuthenticAMD"): 1.34,  # AMD EPYC Zen 4: bench 1.34x-3.8x (docs/precision.md)
    ("bfloat16", "avx512_bf16", None): 0.68,           # Intel Xeon with AVX512_BF16, no AMX
    ("bfloat16", "none", None): 0.52,                  # AMD Zen 3 (0.52-0.96x): TensorFlow's Eigen bf16 kernels
    ("float16", "amx_fp16", None): None,               # no such CPU measured yet
    ("float16", "avx512_fp16", None): None,            # no such CPU measured yet
    ("float16", "none", None): 0.04,                   # LeNet under `npurun run`: 498 ms/step against 19.5 ms
}
HARDWARE_NAME = {"amx_bf16": "AMX-BF16", "avx512_bf16": "AVX512_BF16 (no AMX-BF16)", "amx_fp16": "AMX-FP16",
                 "avx512_fp16": "AVX512-FP16 (no AMX-FP16)", "none": None}
VENDOR_NAME = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}


# ---- the machine ------------------------------------------------------------------------------------
FLAGS = ("avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16")


@dataclass(frozen=True)
class CpuFeatures:
    """The CPU flags that matter for bf16/fp16 speed (names as in /proc/cpuinfo), and the vendor."""

    avx512_bf16: bool = False
    amx_bf16: bool = False
    avx512_fp16: bool = False
    amx_fp16: bool = False
    vendor: str = ""  # /proc/cpuinfo vendor_id: GenuineIntel, AuthenticAMD, ...

    @classmethod
    def from_flags(cls, flags: Iterable[str], vendor: str = "") -> "CpuFeatures":
        present = set(flags)
        return cls(**{name: name in present for name in FLAGS}, vendor=vendor)

    def hardware(self, dtype: str) -> str:
        """The best hardware this CPU has for `dtype`: a hardware key of MEASURED_SPEEDUP."""
        if dtype == "bfloat16":
            return "amx_bf16" if self.amx_bf16 else "avx512_bf16" if self.avx512_bf16 else "none"
        return "amx_fp16" if self.amx_fp16 else "avx512_fp16" if self.avx512_fp16 else "none"

    def describe(self) -> str:
        flags = ", ".join(f"{name} {'yes' if getattr(self, name) else 'no'}" for name in FLAGS)
        return f"{flags} ({self.vendor or 'vendor unknown'})"


def measured_speedup(dtype: str, features: CpuFeatures) -> Optional[float]:
    """The measured low-precision/float32 speed ratio for this CPU's kind (vendor-specific if measured so)."""
    hardware = features.hardware(dtype)
    return MEASURED_SPEEDUP.get((dtype, hardware, features.vendor), MEASURED_SPEEDUP[(dtype, hardware, None)])


def read_cpu_features(path: str = CPUINFO) -> CpuFeatures:
    """The features from the first `vendor_id` and `flags` lines of a /proc/cpuinfo-style file (none if unreadable)."""
    vendor = ""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("vendor_id") and not vendor:
                    vendor = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    return CpuFeatures.from_flags(line.split(":", 1)[1].split(), vendor)
    except OSError:
        pass
    return CpuFeatures(vendor=vendor)


@functools.lru_cache(maxsize=None)
def cpu_features() -> CpuFeatures:
    """This machine's CPU features (read once per process)."""
    return read_cpu_features()


def gpu_likely_present(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether an NVIDIA GPU is visible, without TensorFlow (for `npurun explain`; sessions ask TensorFlow)."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    try:
        return bool(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return False


def forced(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether NPURUN_FORCE_LOW_PRECISION asks for the real low-precision graph on a CPU."""
    value = environ.get(FORCE_ENV, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise ValueError(f"environment variable {FORCE_ENV}={value!r} is not understood: set it to 1 to run "
                     f"low-precision precision_modes with real float16/bfloat16 ops on a CPU, or to 0 (or "
                     f"unset it) for npurun's per-machine policy")


def substituting(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether NPURUN_FP16_AS_BF16 asks for bfloat16 in place of float16 on CPUs with fast bf16."""
    value = environ.get(SUBSTITUTE_ENV, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise ValueError(f"environment variable {SUBSTITUTE_ENV}={value!r} is not understood: set it to 1 to run the "
                     f"fp16 precision_modes in bfloat16 on CPUs with fast bf16, or to 0 (or unset it) to keep them "
                     f"float16 (npurun's per-machine policy)")


# ---- the decision -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """What `mode` does on one machine.

    dtype: the dtype ops are lowered to (None: everything stays float32); device: "CPU" or
    "GPU", where the lowering happens; fallback: a low-precision mode that runs in float32
    because of the speed rule (then `reason` says why, and npurun warns once).
    """

    mode: str
    dtype: Optional[str]
    device: str
    reason: str
    fallback: bool = False
    forced: bool = False
    substituted: bool = False  # bfloat16 in place of the mode's float16 (NPURUN_FP16_AS_BF16=1)
    hint: str = ""  # for explain: what NPURUN_FP16_AS_BF16 would do (or why it does nothing) here

    def summary(self) -> str:
        """One line for `npurun explain`: what runs here and how to change it."""
        hint = f"; {self.hint}" if self.hint else ""
        if self.dtype is None and not self.fallback:
            return f"here: float32 ({self.reason})"
        if self.dtype is None:
            return (f"here: float32, {self.reason}; real {LOW_DTYPE[self.mode]} numerics with {FORCE_ENV}=1{hint}")
        if self.substituted:
            return f"here: bfloat16 in place of float16 on the CPU ({self.reason})"
        return f"here: {self.dtype} on the {self.device} ({self.reason}){hint}"

    def substitution_warning(self) -> str:
        return (f"npurun precision: precision_mode={self.mode!r} runs in bfloat16 in place of float16 on this CPU "
                f"({self.reason}). Unset {SUBSTITUTE_ENV} to keep float16.")

    def warning(self) -> str:
        return (f"npurun precision: precision_mode={self.mode!r} runs in float32 on this CPU, because "
                f"{self.reason} (npurun lowers ops by default only where training is at most "
                f"{SLOWDOWN_LIMIT}x slower). Set {FORCE_ENV}=1 to run the real {LOW_DTYPE[self.mode]} graph "
                f"(for checking numerics: overflow, loss scaling, dump comparison).")


def _measured(dtype: str, speedup: Optional[float]) -> str:
    if speedup is None:
        return f"{dtype} is not measured on such a CPU"
    if speedup < 1:
        return f"{dtype} measured {1 / speedup:.1f}x slower than float32"
    return f"{dtype} measured {speedup:.1f}x faster than float32"


def _cpu_decision(mode: str, dtype: str, features: CpuFeatures, force: bool) -> Decision:
    hardware = features.hardware(dtype)
    speedup = measured_speedup(dtype, features)
    name = HARDWARE_NAME[hardware]
    missing = "AMX-BF16 or AVX512_BF16" if dtype == "bfloat16" else "AVX512-FP16 or AMX-FP16"
    cpu = f"this {VENDOR_NAME.get(features.vendor, features.vendor)} CPU" if features.vendor else "this CPU"
    why = f"{f'{cpu} has {name}' if name else f'{cpu} has no {missing}'}: {_measured(dtype, speedup)}"
    if force:
        return Decision(mode, dtype, "CPU", f"forced by {FORCE_ENV}=1; {why}", forced=True)
    if speedup is not None and speedup >= 1 / SLOWDOWN_LIMIT:
        return Decision(mode, dtype, "CPU", why)
    return Decision(mode, None, "CPU", why, fallback=True)


def decide(mode: Optional[str], *, gpu: bool, features: CpuFeatures, force: bool = False,
           substitute: bool = False) -> Decision:
    """What `mode` does on a machine with (`gpu`, `features`), with or without the forcing switch
    and the bf16-for-fp16 switch (`substitute`, NPURUN_FP16_AS_BF16)."""
    mode = mode or DEFAULT_MODE
    if mode in FLOAT32_MODES:
        why = ("every op has a float32 kernel here; TF32 as the process has it" if mode == DEFAULT_MODE
               else "TF32 off")
        return Decision(mode, None, "GPU" if gpu else "CPU", why)
    dtype = LOW_DTYPE[mode]
    if dtype == "float16" and gpu:
        hint = f"{SUBSTITUTE_ENV}=1 changes nothing on a GPU" if substitute else ""
        return Decision(mode, "float16", "GPU", "fp16 automatic mixed precision on the GPU", hint=hint)
    if dtype == "float16":
        bf16 = _cpu_decision(mode, "bfloat16", features, False)
        speedup = measured_speedup("bfloat16", features)
        fast = speedup is not None and speedup >= FAST_BF16
        if substitute and fast:
            return Decision(mode, "bfloat16", "CPU", f"{SUBSTITUTE_ENV}=1; {bf16.reason}", substituted=True)
        decision = _cpu_decision(mode, dtype, features, force)
        if fast:
            hint = f"{SUBSTITUTE_ENV}=1 runs it in bfloat16 instead ({bf16.reason})"
        else:
            hint = (f"{SUBSTITUTE_ENV}=1 does not apply, bfloat16 is not fast here ({bf16.reason})"
                    if substitute else "")
        return dataclasses.replace(decision, hint=hint)
    # bf16: TensorFlow's bf16 rewrite handles CPU ops only, so the CPU's hardware decides.
    return _cpu_decision(mode, dtype, features, force)


def decide_here(mode: Optional[str], gpu: Optional[bool] = None) -> Decision:
    """`decide` for this machine and process environment (GPU guessed without TensorFlow if not given)."""
    return decide(mode, gpu=gpu_likely_present() if gpu is None else gpu, features=cpu_features(), force=forced(),
                  substitute=substituting())


_warned: set = set()


class LowPrecisionFallbackWarning(UserWarning):
    """A low-precision precision_mode runs in float32 on this machine (see npurun.precision.policy)."""


class LowPrecisionSubstitutionWarning(UserWarning):
    """An fp16 precision_mode runs in bfloat16 on this CPU (NPURUN_FP16_AS_BF16=1)."""


def warn_once(decision: Decision) -> None:
    """Warn about a float32 fallback or a bf16-for-fp16 substitution, once per process and mode."""
    if not (decision.fallback or decision.substituted) or decision.mode in _warned:
        return
    _warned.add(decision.mode)
    if decision.substituted:
        warnings.warn(decision.substitution_warning(), LowPrecisionSubstitutionWarning, stacklevel=3)
    else:
        warnings.warn(decision.warning(), LowPrecisionFallbackWarning, stacklevel=3)
