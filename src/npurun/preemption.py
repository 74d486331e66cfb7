"""Preemption during train(): SIGTERM / SIGINT end training cleanly, with a checkpoint.

Schedulers (Slurm, Kubernetes) preempt with SIGTERM and a grace period; Ctrl-C sends SIGINT.
While `watch()` is open (around one train() call, main thread only):

  - the first SIGTERM or SIGINT is recorded; the training loop finishes the run in flight (a
    step, or a whole device loop), the chief saves a checkpoint with the input position, one line
    is logged, and train() raises SystemExit(128 + signal number): 143 for SIGTERM, 130 for SIGINT;
  - a second signal exits at once (`os._exit` with the same status) even while the main thread is
    blocked inside a long Session.run: a helper thread reads the signal numbers from Python's
    wakeup fd, which the C-level handler writes immediately, whereas Python-level handlers only
    run when the main thread returns to the interpreter;
  - under `npurun launch` (NPURUN_LAUNCHED=1) the same signal again within DUPLICATE_SECONDS of the
    first is the same preemption delivered twice (a scheduler signals every process of the job,
    and the launcher forwards its own copy), not a second signal;
  - the previous handlers (and wakeup fd) are restored when train() returns or raises.

Multi-rank: the ranks agree to stop after the same run (distribute/stop_flag.py): a signalled
rank raises a flag that every rank sees after the same run, and a rank that was not signalled
itself then stops as if it had been (`adopt`: same log line, naming the other rank, same exit
status). The chief saves, the other ranks only stop. A rank whose peer died (kill -9) while it
was stopping fails its collectives within hccl_timeout; after a signal that failure is logged in
one line and the exit status is still 143 / 130 (`peer_stopped_first`).

A signal the process ignores (SIG_IGN) stays ignored. Outside the main thread (train() called
from a worker thread) nothing is installed: Python only allows signal handlers in the main
thread, and the process's handlers belong to whoever owns it.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from typing import Callable, Optional

logger = logging.getLogger("npurun")

SIGNALS = (signal.SIGTERM, signal.SIGINT)
DUPLICATE_SECONDS = 2.0  # under npurun launch: a repeat within this is the launcher's forwarded copy


class Watch:
    """What the training loop asks: `requested` (a signal arrived) and `signum`."""

    def __init__(self):
        self.signum: Optional[int] = None
        self.installed = False
        self.from_peer = False  # the signal was another rank's (see adopt)

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_status(self) -> int:
        return 128 + int(self.signum)

    def name(self) -> str:
        return signal.Signals(self.signum).name

    def _record(self, signum, frame=None) -> None:
        if self.signum is None:
            self.signum = signum

    def adopt(self, signum: int) -> None:
        """The ranks agreed to stop because another rank received `signum`: this process stops as if
        it had received it (same log line, same exit status). Only a watch with handlers installed
        adopts (the shared never-firing watch of a non-main-thread train() must stay unset)."""
        if self.signum is None and self.installed:
            self.signum = signum
            self.from_peer = True

    def peer_stopped_first(self, error: BaseException, newest_checkpoint: Callable[[], Optional[str]]) -> bool:
        """After a signal: whether `error` (from train()) is a collective that failed because a peer
        rank was gone (it died, or stopped without agreeing); then it is logged (one line, naming
        `newest_checkpoint()`) and the exit status stays 143 / 130."""
        if not self.requested or type(error).__name__ != "CollectiveTimeoutError":
            return False
        newest = newest_checkpoint()
        timeout = getattr(error, "timeout", None)
        within = f" within hccl_timeout={timeout:g} s" if timeout is not None else ""
        logger.warning("%s: a peer rank did not answer%s (it exited or was killed), so the run in flight failed; "
                       "no checkpoint from this run (the newest is %s); exiting with status %d", self.name(), within,
                       newest or "none", self.exit_status)
        return True

    def exit_if_requested(self) -> None:
        """Raise SystemExit with the conventional status when a signal arrived."""
        if self.requested:
            raise SystemExit(self.exit_status)


_NO_WATCH = Watch()
_current: Watch = _NO_WATCH


def current() -> Watch:
    """The Watch of the train() call in progress (one that never fires when none is)."""
    return _current


@contextlib.contextmanager
def watch():
    """Install the handlers for one train() call (see the module docstring); yields the Watch."""
    global _current
    state = Watch()
    if threading.current_thread() is not threading.main_thread() or _current is not _NO_WATCH:
        yield state  # a nested or non-main-thread train(): the outer watch (or nobody) handles signals
        return
    # A signal the process ignores stays ignored (e.g. SIGINT for a job started in the background
    # by a non-interactive shell).
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN}
    if not previous:
        yield state
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    try:
        old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(read_fd)
        os.close(write_fd)
        yield state
        return
    stop_reader = threading.Event()
    reader = threading.Thread(target=_count_signals, args=(read_fd, state, stop_reader, tuple(previous)),
                              name="npurun-preemption", daemon=True)
    try:
        for sig in previous:
            signal.signal(sig, state._record)
        state.installed = True
        _current = state
        reader.start()
        yield state
    finally:
        _current = _NO_WATCH
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_wakeup)
        stop_reader.set()
        os.write(write_fd, b"\0")  # wakes the reader so it sees stop_reader
        reader.join(timeout=5)
        os.close(write_fd)
        os.close(read_fd)


def _count_signals(read_fd: int, state: Watch, stop: threading.Event, watched) -> None:
    seen, first = 0, None
    launched = os.environ.get("NPURUN_LAUNCHED") == "1"
    while not stop.is_set():
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        for number in data:
            if number not in watched or stop.is_set():
                continue
            now = time.monotonic()
            if launched and first is not None and number == first[0] and now - first[1] < DUPLICATE_SECONDS:
                continue  # the launcher's copy of the signal the scheduler also sent here
            first = first or (number, now)
            seen += 1
            state._record(number)
            if seen >= 2:
                logger.warning("Second %s: exiting at once, without a checkpoint", signal.Signals(number).name)
                os._exit(128 + number)
