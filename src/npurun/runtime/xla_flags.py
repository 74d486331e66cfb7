"""Process-wide XLA flags: `TF_XLA_FLAGS` (TensorFlow's XLA bridge) and `XLA_FLAGS` (the compiler).

Rules:
  - TensorFlow parses each variable once per process and never again: `TF_XLA_FLAGS` when the
    first Session (or the first XLA kernel) is created, `XLA_FLAGS` at the first XLA compilation.
    A flag set after that is silently ignored by TensorFlow, so npurun checks instead of hoping.
  - Contributors *request* flags (`request(plan, VARIABLE, "--flag=value")`); the request is
    recorded in `plan.env` (so `plan.environment()` shows and sets it) and in the plan's pending
    list. `apply(plan, VARIABLE)` applies them; `contribute`, registered after every contributor
    that requests flags, applies what is left. TF_XLA_FLAGS is read as soon as TensorFlow lists
    its devices, so the contributor needing it runs first and applies it itself.
  - Applying means: put the flags in the environment, make TensorFlow parse them now, and verify
    that it did. If TensorFlow had already parsed the variable (an earlier session, an earlier XLA
    compilation), a `UserWarning` names the flags that cannot take effect in this process and
    says how to get them (set the variable before the first session, or start a new process).
  - Detection of "already parsed" is exact, not guessed:
      TF_XLA_FLAGS: a sentinel `--tf_xla_disable_constant_folding=true` rides along; reading the
        flag back through TensorFlow's C API (which parses on first use) returns True only if
        this very parse saw our value. The flag is then reset to its previous value.
      XLA_FLAGS: a tiny probe function is XLA-compiled with `--xla_dump_to`; the probe's dump
        appears only if the compiler read our flags. The probe's files are removed afterwards.
  - What one process applied is remembered, so building a second plan with the same flags (an
    evaluation after training) is silent.
"""
from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import warnings
from typing import Iterable

from .. import safe_files
from .plan import Options, SessionPlan

TF_XLA_FLAGS = "TF_XLA_FLAGS"
XLA_FLAGS = "XLA_FLAGS"
VARIABLES = (TF_XLA_FLAGS, XLA_FLAGS)

_SENTINEL_FLAG = "--tf_xla_disable_constant_folding"
_PROBE_NAME = "npurun_xla_flags_probe"

# variable -> frozenset of flags known to be in force in this process, or None when TensorFlow
# parsed the variable before npurun could set it (contents unknown to us).
_parsed: dict = {}


def flag_name(flag: str) -> str:
    """`--xla_dump_to=/x` -> `--xla_dump_to`."""
    return flag.split("=", 1)[0]


def merge(current: str, flags: Iterable[str]) -> str:
    """`current` with `flags` appended; an earlier flag of the same name is dropped (ours win)."""
    flags = list(flags)
    names = {flag_name(f) for f in flags}
    kept = [token for token in shlex.split(current or "") if flag_name(token) not in names]
    return " ".join(kept + flags)


def request(plan: SessionPlan, variable: str, *flags: str) -> None:
    """Ask for `flags` in `variable`; applied by `contribute` at the end of plan building."""
    if variable not in VARIABLES:
        raise ValueError(f"unknown flag variable {variable!r}; allowed: {', '.join(VARIABLES)}")
    pending = _pending(plan)
    pending[variable] = [f for f in pending.get(variable, []) if flag_name(f) not in
                         {flag_name(g) for g in flags}] + list(flags)
    plan.env[variable] = merge(plan.env.get(variable, os.environ.get(variable, "")), flags)


def requested(plan: SessionPlan, variable: str) -> tuple:
    """The flags requested for `variable` so far in this plan."""
    return tuple(_pending(plan).get(variable, ()))


def _pending(plan: SessionPlan) -> dict:
    # Stored on the plan object itself: SessionPlan is a plain dataclass and the request list is
    # only meaningful while contributors run.
    if not hasattr(plan, "_xla_flag_requests"):
        plan._xla_flag_requests = {}
    return plan._xla_flag_requests


def parsed_state(variable: str):
    """What this process is known to have parsed for `variable`: a frozenset of flags, None
    (parsed before npurun set anything), or the string "unparsed"."""
    return _parsed.get(variable, "unparsed")


def apply(plan: SessionPlan, variable: str) -> None:
    """Apply the flags requested so far for `variable` to this process (see module rules).

    TF_XLA_FLAGS is read as soon as anything lists TensorFlow's devices (a session, or
    tf.config.list_physical_devices), so its requester applies it before any other contributor
    runs; XLA_FLAGS is read at the first XLA compilation and is applied by `contribute`.
    """
    flags = _pending(plan).get(variable)
    done = _pending(plan).setdefault("applied", set())
    if not flags or (variable, tuple(flags)) in done:
        return  # nothing asked, or already applied (or warned about) for this plan
    done.add((variable, tuple(flags)))
    missing = _not_in_force(variable, flags)
    if missing and parsed_state(variable) == "unparsed":
        missing = (_apply_tf_xla_flags if variable == TF_XLA_FLAGS else _apply_xla_flags)(flags)
    if missing:
        _warn_too_late(variable, missing)


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    """Apply every flag requested by earlier contributors (registered after all of them)."""
    # TF_XLA_FLAGS first: the XLA_FLAGS probe creates a Session, which reads TF_XLA_FLAGS.
    for variable in VARIABLES:
        apply(plan, variable)


def _not_in_force(variable: str, flags) -> list:
    state = parsed_state(variable)
    if state == "unparsed":
        return list(flags)
    known = state or frozenset()
    return [f for f in flags if f not in known]


def _warn_too_late(variable: str, flags) -> None:
    warnings.warn(
        f"npurun: TensorFlow already read {variable} in this process (an earlier session or XLA "
        f"compilation), so these flags cannot take effect here: {' '.join(flags)}. Set "
        f"{variable}=\"{' '.join(flags)}\" before the first session, or run in a new process.",
        UserWarning, stacklevel=5)


def _apply_tf_xla_flags(flags) -> list:
    """Parse TF_XLA_FLAGS now with `flags`; return the flags that did not take effect."""
    from tensorflow.python.client import pywrap_tf_session as c_api

    before = os.environ.get(TF_XLA_FLAGS)
    if _SENTINEL_FLAG in {flag_name(t) for t in shlex.split(before or "")}:
        # The user set the sentinel flag themselves: parse with our flags, but we cannot verify.
        os.environ[TF_XLA_FLAGS] = merge(before, flags)
        c_api.TF_GetXlaConstantFoldingDisabled()
        _parsed[TF_XLA_FLAGS] = frozenset(shlex.split(os.environ[TF_XLA_FLAGS]))
        _restore(TF_XLA_FLAGS, before)
        return []
    os.environ[TF_XLA_FLAGS] = merge(before, list(flags) + [_SENTINEL_FLAG + "=true"])
    try:
        took = bool(c_api.TF_GetXlaConstantFoldingDisabled())
        if took:
            c_api.TF_SetXlaConstantFoldingDisabled(False)  # the sentinel's default value
    finally:
        _restore(TF_XLA_FLAGS, before)
    if took:
        _parsed[TF_XLA_FLAGS] = frozenset(shlex.split(merge(before, flags)))
        return []
    _parsed[TF_XLA_FLAGS] = None
    return list(flags)


def _apply_xla_flags(flags) -> list:
    """Make the compiler parse XLA_FLAGS now with `flags` (by compiling a probe); return the
    flags that did not take effect."""
    before = os.environ.get(XLA_FLAGS)
    dump_to = next((f.split("=", 1)[1] for f in flags if flag_name(f) == "--xla_dump_to"), None)
    probe_dir = dump_to or tempfile.mkdtemp(prefix="npurun_xla_probe_")
    extra = [] if dump_to else ["--xla_dump_to=" + probe_dir, f"--xla_dump_hlo_module_re=.*{_PROBE_NAME}.*"]
    os.environ[XLA_FLAGS] = merge(before, list(flags) + extra)
    try:
        _compile_probe()
        took = _remove_probe_dump(probe_dir)
    finally:
        _restore(XLA_FLAGS, before)
        if not dump_to:
            shutil.rmtree(probe_dir, ignore_errors=True)
    if took:
        _parsed[XLA_FLAGS] = frozenset(shlex.split(merge(before, flags)))
        return []
    _parsed[XLA_FLAGS] = None
    return list(flags)


def _compile_probe() -> None:
    """XLA-compile a two-element function in a throwaway graph (about 0.1-0.4 s)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        def probe(x):
            return x * 2.0 + 1.0
        probe.__name__ = _PROBE_NAME  # the XLA module name carries it: how the dump is recognised
        # A placeholder input keeps grappler from folding the call away before XLA sees it.
        x = tf.compat.v1.placeholder(tf.float32, [2])
        y = tf.function(probe, jit_compile=True)(x)
    with tf.compat.v1.Session(graph=graph, config=tf.compat.v1.ConfigProto(device_count={"GPU": 0})) as session:
        session.run(y, {x: [1.0, 2.0]})


def _remove_probe_dump(directory: str) -> bool:
    """Delete the probe's dump files; True if there were any (the compiler read our flags)."""
    try:
        names = [n for n in os.listdir(directory) if _PROBE_NAME in n]
    except FileNotFoundError:
        return False
    for name in names:
        safe_files.remove(os.path.join(directory, name))  # a link itself, never its target
    return bool(names)


def _restore(variable: str, value) -> None:
    if value is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = value
