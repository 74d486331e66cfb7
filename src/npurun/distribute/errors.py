"""Errors of distributed runs, with messages that say which rank, what happened and which knob bounds it.

TensorFlow reports a collective that lost a peer as `DeadlineExceededError` ("Collective has timed
out waiting for other workers"), `UnavailableError` (the peer's socket refused or closed),
`CancelledError` / `AbortedError` (a collective aborted because an earlier one failed); the text
names an op and the gRPC call, not the rank or the timeout. `explain` turns those into
`CollectiveTimeoutError`; `explained(...)` does it for every error raised inside a block.

Rules:
- A TensorFlow error counts as a collective failure when it is one of the four types above and
  either its op (`error.op`) is a collective op or its text comes from the collective runtime
  ("Collective", "RecvBuf", "GetStepSequence", "Socket closed", "failed to connect"). Anything
  else (an OutOfRangeError, a DeadlineExceededError of `operation_timeout_in_ms`, a Python
  error) passes through unchanged, as the same object.
- Except where the run deadline is hccl_timeout's (`run_deadline=True`): on a rank of a
  collective job, `cluster.configure` enforces hccl_timeout as the session's
  `operation_timeout_in_ms` (the collective ops carry no timeout of their own, see collectives.py),
  so there TensorFlow's DeadlineExceededError of a run past it ("Operation timed out", in process
  "Timed out waiting for notification") is a collective failure too.
  `explained(config)` assumes so for an NPURunConfig (or its options) of a collective job without
  op_wait_timeout (which, when set, is the run deadline instead).
- The message starts `rank R of N: ` and always names `hccl_timeout=T s` (the timeout in force:
  the option, else HCCL_EXEC_TIMEOUT, else 1800 s), then what happened, the usual causes and
  TensorFlow's own reason line. The error has `rank_id`, `rank_size`, `timeout` attributes and the
  original error as `__cause__`.
- PS mode (a ps job in TF_CONFIG): a lost connection or a run past its deadline is a
  `ParameterServerError` naming the ps task(s) and the run deadline (op_wait_timeout), not a
  collective and not hccl_timeout.
- `StartupTimeoutError` is the start-up's own error (see `cluster`); `InitializationTimeoutError`
  (a kind of it) is a parameter-server worker whose chief did not initialise the variables in time.

Plain Python: TensorFlow errors are recognised by their class names, so importing this module does
not import TensorFlow.
"""
from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Iterator, Optional

from ..reporting import UserFixableError
from . import ranks, settings


class StartupTimeoutError(UserFixableError, RuntimeError):
    """Some ranks did not start (or were not reachable) within the start-up timeout."""

    def __init__(self, message: str, missing: tuple = ()):
        super().__init__(message)
        self.missing = missing  # rank ids that never became reachable


class InitializationTimeoutError(StartupTimeoutError):
    """A parameter-server worker waited in vain for the chief to initialise the shared variables.

    `missing` holds the names of the variables still uninitialised when the wait ended.
    """


class StartupIdentityError(StartupTimeoutError):
    """Two processes claim one task (rank), or the processes disagree on how many ranks there are."""


class ServerStartError(UserFixableError, RuntimeError):
    """This task's TensorFlow server could not start (its port is in use, or its address is not this host's)."""


class CollectiveTimeoutError(UserFixableError, RuntimeError):
    """A collective operation failed because a peer rank stopped, hung or became unreachable."""

    def __init__(self, message: str, rank_id: Optional[int] = None, rank_size: Optional[int] = None,
                 timeout: Optional[float] = None):
        super().__init__(message)
        self.rank_id = rank_id
        self.rank_size = rank_size
        self.timeout = timeout


class ParameterServerError(UserFixableError, RuntimeError):
    """PS mode: a worker lost its parameter server (the ps task stopped, crashed or is unreachable).

    Attributes: `ps_tasks` (the ps task names the error concerns), `deadline` (the run deadline in
    seconds, op_wait_timeout; None when runs have none).
    """

    def __init__(self, message: str, ps_tasks: tuple = (), deadline: Optional[float] = None):
        super().__init__(message)
        self.ps_tasks = ps_tasks
        self.deadline = deadline


def _ps_tasks() -> list:
    """(index, address) of TF_CONFIG's ps job; [] without one (or with an unreadable TF_CONFIG)."""
    import os

    raw = os.environ.get("TF_CONFIG", "").strip()
    if not raw:
        return []
    try:
        return list(enumerate(ranks.parse_tf_config(raw)["cluster"].get("ps", ())))
    except ValueError:
        return []


def _explain_ps(error: BaseException, tasks: list, who: str, deadline: Optional[float]) -> BaseException:
    import re

    named = sorted({int(m) for m in re.findall(r"/job:ps/replica:\d+/task:(\d+)", str(error))})
    chosen = [(i, a) for i, a in tasks if i in named] or tasks
    names = ", ".join(f"ps {i} ({a})" for i, a in chosen)
    if "DeadlineExceededError" in _class_names(error):
        what = (f"a run did not complete within its deadline (op_wait_timeout={_seconds(deadline)} s)"
                if deadline is not None else "a run did not complete within its deadline")
    else:
        what = "lost its connection to the parameter server"
    bound = (f"runs wait up to op_wait_timeout={_seconds(deadline)} s" if deadline is not None else
             "runs have no deadline in PS mode unless op_wait_timeout is set")
    clear = ParameterServerError(
        f"{who} (parameter-server mode): {what}: {names} stopped, crashed or is unreachable ({bound}). "
        f"TensorFlow ({type(error).__name__}): {tf_reason(error)}", tuple(f"ps {i}" for i, _ in chosen), deadline)
    clear.__cause__ = error
    return clear


_PEER_ERRORS = frozenset({"DeadlineExceededError", "UnavailableError", "AbortedError", "CancelledError"})
_MARKERS = ("Collective", "collective", "RecvBuf", "GetStepSequence", "Socket closed", "failed to connect")


# What a session run past `operation_timeout_in_ms` says: the gRPC session, the in-process one.
_RUN_DEADLINE_TEXTS = ("Operation timed out", "Timed out waiting for notification")


def _class_names(error: BaseException) -> set:
    return {cls.__name__ for cls in type(error).__mro__}


def _from_collective_op(error: BaseException) -> bool:
    op = getattr(error, "op", None)
    return bool(op is not None and str(getattr(op, "type", "")).startswith("Collective"))


def is_peer_failure(error: BaseException, run_deadline: bool = False) -> bool:
    """Whether `error` is TensorFlow reporting a collective that lost a peer (see the module rules)."""
    if not _class_names(error) & _PEER_ERRORS:
        return False
    if run_deadline and "DeadlineExceededError" in _class_names(error) and \
            any(text in str(error) for text in _RUN_DEADLINE_TEXTS):
        return True
    return _from_collective_op(error) or any(marker in str(error) for marker in _MARKERS)


def _seconds(timeout) -> str:
    return f"{timeout:g}" if isinstance(timeout, (int, float)) else str(timeout)


def explain(error: BaseException, rank_id: Optional[int] = None, rank_size: Optional[int] = None,
            timeout: Optional[float] = None, run_deadline: bool = False,
            ps_deadline: Optional[float] = None) -> BaseException:
    """A `CollectiveTimeoutError` for a collective that lost a peer (with `error` as its `__cause__`),
    else `error` itself.

    `timeout`: the hccl_timeout in force, in seconds (None: `settings.collective_timeout()`).
    `run_deadline`: the session's run deadline is hccl_timeout's (see the module rules).
    In PS mode (TF_CONFIG has a ps job) a lost connection is a `ParameterServerError` naming the
    ps task(s) and `ps_deadline` (op_wait_timeout), never a collective.
    """
    tasks = _ps_tasks()
    if tasks and _class_names(error) & _PEER_ERRORS and (is_peer_failure(error, run_deadline)
                                                          or "/job:ps" in str(error)):
        # PS mode has no collectives: name the ps task and the run deadline, not hccl_timeout
        who = f"worker rank {rank_id} of {rank_size}" if rank_id is not None else "this worker"
        return _explain_ps(error, tasks, who, ps_deadline)
    if not is_peer_failure(error, run_deadline):
        return error
    if timeout is None:
        timeout = _timeout_or_none(None)
    who = f"rank {rank_id} of {rank_size}" if rank_id is not None else "this rank"
    limit = f"hccl_timeout={_seconds(timeout)} s" if timeout is not None else "hccl_timeout"
    names = _class_names(error)
    if "DeadlineExceededError" in names:
        what = f"a collective operation did not complete within {limit}"
    elif "UnavailableError" in names:
        what = f"a collective operation lost its connection to a peer rank (collectives wait up to {limit})"
    else:
        what = (f"a collective operation was aborted because an earlier collective of this process failed "
                f"(collectives wait up to {limit}; restart the process)")
    detail = tf_reason(error)
    clear = CollectiveTimeoutError(
        f"{who}: {what}: another rank stopped, crashed or is much slower (for example while saving a "
        f"checkpoint longer than the timeout; raise hccl_timeout or HCCL_EXEC_TIMEOUT for that). "
        f"TensorFlow ({type(error).__name__}): {detail}", rank_id, rank_size, timeout)
    clear.__cause__ = error
    return clear


def tf_reason(error: BaseException) -> str:
    """The line of a TensorFlow error's text that says why (its first line when none does)."""
    lines = [line.strip() for line in str(error).strip().splitlines()]
    for line in lines:
        if "ollective" in line and ("timed out" in line or "aborted" in line):
            return line
        if "failed to connect" in line or "Socket closed" in line or "RecvBuf" in line:
            return line
        if line.startswith(_RUN_DEADLINE_TEXTS):  # the run deadline (cluster.configure)
            return line
    for before, line in zip(lines, lines[1:]):
        if before.startswith("Node: ") and line:  # graph-mode text: the reason follows the node's name
            return line
    return lines[0] if lines and lines[0] else type(error).__name__


def _settings_of(source: Any) -> settings.DistributeSettings:
    if source is None:
        return settings.current()
    if isinstance(source, settings.DistributeSettings):
        return source
    if isinstance(source, Mapping):
        return settings.from_options(source)
    options = getattr(source, "options", None)  # an NPURunConfig
    if isinstance(options, Mapping):
        return settings.from_options(options)
    raise TypeError(f"explained(): expected an NPURunConfig, its options, a DistributeSettings or None; "
                    f"got {type(source).__name__}")


def _timeout_or_none(source: Any) -> Optional[int]:
    try:
        return settings.collective_timeout(_settings_of(source))
    except ValueError:  # a malformed HCCL_EXEC_TIMEOUT: the ops' construction reported it already
        return None


def _rank() -> tuple:
    try:
        return ranks.get_rank_id(), ranks.get_rank_size()
    except ValueError:  # inconsistent rank variables: still report the collective failure
        return None, None


def _run_deadline_of(source: Any) -> bool:
    """Whether sessions built for `source` (an NPURunConfig or its options) have hccl_timeout as
    their run deadline: a collective job (more than one rank, no parameter servers) without
    op_wait_timeout."""
    options = source if isinstance(source, Mapping) else getattr(source, "options", None)
    if not isinstance(options, Mapping) or options.get("op_wait_timeout") is not None:
        return False
    if options.get("distribute") is not None:
        return False
    rank_size = _rank()[1]
    return bool(rank_size and rank_size > 1)


@contextlib.contextmanager
def explained(source: Any = None, run_deadline: Optional[bool] = None) -> Iterator[None]:
    """Within the block, a TensorFlow error of a collective that lost a peer is raised as
    `CollectiveTimeoutError` (`from` the original); any other exception passes unchanged.

    `source` gives the hccl_timeout to name: an NPURunConfig, its options mapping, a
    `DistributeSettings`, or None for the current settings. The rank and rank size are read when
    the error happens. Nesting is harmless (an explained error is not explained again).
    `run_deadline`: whether the session's run deadline is hccl_timeout's (None: from `source`, see
    the module rules).

    Example: `with explained(config): estimator_loop()`.
    """
    timeout = _timeout_or_none(source)
    if run_deadline is None:
        run_deadline = _run_deadline_of(source)
    options = source if isinstance(source, Mapping) else getattr(source, "options", None)
    ps_deadline = options.get("op_wait_timeout") if isinstance(options, Mapping) else None
    try:
        yield
    except Exception as error:
        clear = explain(error, *_rank(), timeout, run_deadline, ps_deadline)
        if clear is error:
            raise
        raise clear from error
