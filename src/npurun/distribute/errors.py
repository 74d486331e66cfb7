"""Errors of distributed runs, with messages that say which rank, what happened and which knob bounds it.

TensorFlow reports a dead or missing peer as `DeadlineExceededError` ("Collective has timed out
waiting for other workers"), or `UnavailableError` when the peer's socket is refused or closed.
`explain` turns those into `CollectiveTimeoutError` naming this rank, the timeout in force and
the usual causes; anything else is returned unchanged.
"""
from __future__ import annotations

from typing import Optional


class StartupTimeoutError(RuntimeError):
    """Some ranks did not start (or were not reachable) within the start-up timeout."""

    def __init__(self, message: str, missing: tuple = ()):
        super().__init__(message)
        self.missing = missing  # rank ids that never became reachable


class CollectiveTimeoutError(RuntimeError):
    """A collective operation failed because a peer rank stopped, hung or became unreachable."""


_PEER_ERRORS = ("DeadlineExceededError", "UnavailableError", "AbortedError", "CancelledError")
_MARKERS = ("Collective", "collective", "RecvBuf", "GetStepSequence", "Socket closed", "failed to connect")


def is_peer_failure(error: BaseException) -> bool:
    """Whether `error` is TensorFlow reporting a collective that lost a peer."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & set(_PEER_ERRORS)) and any(marker in str(error) for marker in _MARKERS)


def explain(error: BaseException, rank_id: Optional[int] = None, rank_size: Optional[int] = None,
            timeout: Optional[int] = None) -> BaseException:
    """A `CollectiveTimeoutError` for a lost peer (the original chained as its cause), else `error`."""
    if not is_peer_failure(error):
        return error
    who = f"rank {rank_id} of {rank_size}" if rank_id is not None else "this rank"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    detail = _tf_reason(str(error)) or first_line
    if type(error).__name__ == "DeadlineExceededError":
        what = (f"a collective operation did not complete within hccl_timeout={timeout} s"
                if timeout else "a collective operation timed out")
    else:
        what = "a collective operation lost its connection to a peer rank"
    return CollectiveTimeoutError(
        f"{who}: {what}: another rank stopped, crashed or is much slower (for example while saving a "
        f"checkpoint longer than the timeout). TensorFlow: {detail}")


def _tf_reason(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if "Collective" in line and ("timed out" in line or "aborted" in line):
            return line
        if "failed to connect" in line or "Socket closed" in line:
            return line
    return ""
