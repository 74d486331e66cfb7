"""The ordered list of plan contributors, and `build_plan`, which runs them; each contributor module owns
the options it maps."""
from __future__ import annotations

from ..debug import contribute as debug
from ..distribute import contribute as distribute
from ..precision import modes as precision
from .plan import Contributor, Options, SessionPlan, base_config_proto
from . import (compilation, compile_cache, debug_artifacts, dynamic_inputs, fusion_switches, resources,
               session_options, xla_flags)

CONTRIBUTORS = (
    # First: TensorFlow reads TF_XLA_FLAGS (the cache folder) as soon as anything lists devices.
    compile_cache.contribute,
    session_options.contribute,
    debug.contribute,
    precision.contribute,
    compilation.contribute,
    fusion_switches.contribute,
    debug_artifacts.contribute,
    resources.contribute,
    dynamic_inputs.contribute,
    distribute.contribute,
    # Last: applies the process-wide XLA flags the contributors above requested.
    xla_flags.contribute,
)


def build_plan(options: Options, mode: str, contributors: tuple[Contributor, ...] | None = None) -> SessionPlan:
    """The plan for a session in `mode` ("train", "eval", "infer")."""
    plan = SessionPlan(config_proto=base_config_proto(options))
    for contribute in contributors if contributors is not None else CONTRIBUTORS:
        contribute(options, mode, plan)
    return plan
