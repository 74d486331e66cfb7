"""The distributed options in force while a graph is built: hccl_timeout, hcom_parallel, tailing,
local_rank_id / local_device_list.

Collectives and the distributed optimizer are created inside `model_fn`, which does not see the
run config; the plan contributor (`contribute.py`) activates the options when the session plan is
built, which the Estimator does before it calls `model_fn` (the plan also gives the device the
model is placed on). Scripts that build graphs themselves use `use(...)`.

Plain Python: no TensorFlow.

Rules:
- `hccl_timeout` (seconds): the option when set, else the `HCCL_EXEC_TIMEOUT` environment variable
  (Ascend's name), else 1800 s (HCCL's default execution timeout).
- the start-up timeout (seconds): `HCCL_CONNECT_TIMEOUT` (Ascend's name), else 120 s (HCCL's
  default). Unlike HCCL (which requires >= 120) any positive int is accepted, so tests can be short.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional

DEFAULT_EXEC_TIMEOUT = 1800  # HCCL_EXEC_TIMEOUT's documented default, seconds
DEFAULT_CONNECT_TIMEOUT = 120  # HCCL_CONNECT_TIMEOUT's documented default, seconds


@dataclass(frozen=True)
class DistributeSettings:
    """Distributed options as the graph-building code reads them."""

    hccl_timeout: Optional[int] = None  # None: HCCL_EXEC_TIMEOUT or the default
    hcom_parallel: bool = False
    is_tailing_optimization: bool = False
    horovod_mode: bool = False
    local_rank_id: Optional[int] = None  # the local rank that feeds the others (see feed.py)
    local_device_list: Any = None  # the local ranks it feeds (None: all)


_active = DistributeSettings()


def _positive_env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > 9 or int(text) <= 0:
        raise ValueError(f"environment variable {name}: got {text[:40]!r}; allowed: an int of seconds > 0 "
                         f"(ASCII digits, at most 9)")
    return int(text)


def current() -> DistributeSettings:
    """The settings graph-building code should use now."""
    return _active


def collective_timeout(of: Optional[DistributeSettings] = None) -> int:
    """Seconds a collective may wait for its peers before failing (hccl_timeout) under the settings
    `of` (default: the current ones)."""
    chosen = _active if of is None else of
    if chosen.hccl_timeout is not None:
        return chosen.hccl_timeout
    return _positive_env("HCCL_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT)


def startup_timeout() -> int:
    """Seconds to wait at start-up for every rank to be reachable (HCCL_CONNECT_TIMEOUT)."""
    return _positive_env("HCCL_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT)


def from_options(options: Mapping[str, Any]) -> DistributeSettings:
    """The settings an NPURunConfig's options ask for."""
    return DistributeSettings(hccl_timeout=options.get("hccl_timeout"),
                              hcom_parallel=bool(options.get("hcom_parallel", False)),
                              is_tailing_optimization=bool(options.get("is_tailing_optimization", False)),
                              horovod_mode=bool(options.get("horovod_mode", False)),
                              local_rank_id=options.get("local_rank_id"),
                              local_device_list=options.get("local_device_list"))


def activate(settings: DistributeSettings) -> None:
    """Make `settings` current (the plan contributor calls this for each plan it builds)."""
    global _active
    _active = settings


@contextlib.contextmanager
def use(**changes: Any) -> Iterator[DistributeSettings]:
    """Within the block, the current settings with `changes` applied; restored afterwards.

    Example: `with use(hccl_timeout=10, hcom_parallel=True): train_op = opt.minimize(loss)`.
    """
    global _active
    saved = _active
    _active = replace(saved, **changes)
    try:
        yield _active
    finally:
        _active = saved
