"""Whether TensorFlow will run with oneDNN on, decided without importing TensorFlow.

TensorFlow decides once, when it starts (tensorflow/core/util/port.cc, IsMklEnabled and
DefaultOneDnnPolicy): the environment variable TF_ENABLE_ONEDNN_OPTS wins when it reads as a
boolean ("0"/"false"/"1"/"true", any case); otherwise, on Linux, oneDNN is on by default only on
CPUs with neural-network instructions: AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX (tile/int8/bf16)
on x86, Neoverse V1 on Arm; on Windows x86 it is on. A value that is not a boolean keeps the
default (TensorFlow warns).

Several option mechanisms change with it (oneDNN kernels run NCHW convolutions, the remapper's
layer-norm fusion exists only with oneDNN, the bf16 rewrite needs it), so `npurun explain` and the
tests ask this module. Plain Python: the config layer never imports TensorFlow.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass

ENV = "TF_ENABLE_ONEDNN_OPTS"
# /proc/cpuinfo flag names of the x86 features TensorFlow's default rule tests.
X86_FLAGS = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")
NEOVERSE_V1_PART = "0xd40"  # Arm "CPU part" of Neoverse V1 (implementer 0x41)


@dataclass(frozen=True)
class OneDnn:
    """oneDNN on or off in a TensorFlow process started now, and why."""

    enabled: bool
    reason: str

    def __bool__(self) -> bool:
        return self.enabled


def _parse_bool(text: str | None):
    if text is None:
        return None
    lowered = text.strip().lower()
    if lowered in ("1", "true"):
        return True
    if lowered in ("0", "false"):
        return False
    return None


def _read_cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def cpu_default(cpuinfo: str | None = None, system: str | None = None, machine: str | None = None) -> OneDnn:
    """TensorFlow's default for this CPU (no TF_ENABLE_ONEDNN_OPTS), from /proc/cpuinfo."""
    system = system or platform.system()
    machine = (machine or platform.machine()).lower()
    if system == "Windows" and machine in ("amd64", "x86_64"):
        return OneDnn(True, "default on Windows x86")
    if system != "Linux":
        return OneDnn(False, f"default on {system} (no oneDNN build)")
    text = _read_cpuinfo() if cpuinfo is None else cpuinfo
    if machine in ("aarch64", "arm64"):
        parts = {line.split(":", 1)[1].strip().lower() for line in text.splitlines()
                 if line.lower().startswith("cpu part") and ":" in line}
        if NEOVERSE_V1_PART in parts:
            return OneDnn(True, "default on this CPU (Arm Neoverse V1)")
        return OneDnn(False, "default on this CPU (Arm, not Neoverse V1)")
    flags: set = set()
    for line in text.splitlines():
        if line.startswith("flags") and ":" in line:
            flags.update(line.split(":", 1)[1].split())
            break  # every core lists the same flags
    found = [flag for flag in X86_FLAGS if flag in flags]
    if found:
        return OneDnn(True, f"default on this CPU (it has {', '.join(found)})")
    return OneDnn(False, "default on this CPU (none of " + ", ".join(X86_FLAGS) + ")")


def decide(environ=None, cpuinfo: str | None = None, system: str | None = None,
           machine: str | None = None) -> OneDnn:
    """Whether a TensorFlow process started with `environ` (os.environ by default) runs oneDNN."""
    environ = os.environ if environ is None else environ
    raw = environ.get(ENV)
    forced = _parse_bool(raw)
    if forced is not None:
        return OneDnn(forced, f"{ENV}={raw}")
    return cpu_default(cpuinfo, system, machine)
