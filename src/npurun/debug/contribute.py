"""Plan contributor for dump_config, profiling_config (hooks) and enable_exception_dump (none).

Rules:
- A hook is added only when its switch is on: `DumpConfig.enable_dump` -> TensorDumpHook,
  `DumpConfig.enable_dump_debug` -> OverflowHook (both write one shared dump directory per session),
  `ProfilingConfig.enable_profiling` with `training_trace` or `task_trace` "on" -> ProfilingHook.
  With the defaults the plan gets no hook and no graph transform: nothing runs per step.
- Profiling switched on with neither trace requested collects nothing; that is warned about.
- `enable_exception_dump` adds nothing to the plan: hooks cannot see a failing run, so the
  Estimator wraps its session runs in `npurun.debug.exception_dump.exception_dump`.
- Modes are the plan's ("train", "eval", "infer"); `iterations_per_loop` tells the hooks how many
  steps one training host call covers.
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping


def contribute(options: Mapping[str, Any], mode: str, plan) -> None:
    steps_per_run = (options.get("iterations_per_loop") or 1) if mode == "train" else 1
    dump = options.get("dump_config")
    if dump is not None and (dump.enable_dump or dump.enable_dump_debug):
        from .dump import TensorDumpHook
        from .dump_files import DumpWriter
        from .executed_dump import rewrites_precision
        from .overflow import OverflowHook

        writer = DumpWriter(dump.dump_path, mode)
        if dump.enable_dump:
            plan.hooks.append(TensorDumpHook(dump, mode, steps_per_run, writer=writer,
                                             executed_graph=lambda: rewrites_precision(plan.config_proto)))
        if dump.enable_dump_debug:
            plan.hooks.append(OverflowHook(dump, mode, steps_per_run, writer=writer))
    profiling = options.get("profiling_config")
    if profiling is not None and profiling.enable_profiling:
        parsed = profiling.options
        if parsed.get("training_trace") == "on" or parsed.get("task_trace") == "on":
            from .profiling import ProfilingHook

            plan.hooks.append(ProfilingHook(parsed, mode, steps_per_run))
        else:
            warnings.warn("ProfilingConfig: enable_profiling=True but neither training_trace nor task_trace is "
                          "'on' in profiling_options; nothing is collected", UserWarning, stacklevel=3)
