"""Dead-peer detection faster than hccl_timeout: a heartbeat of TCP connects to every peer's server.

Plain Python (no TensorFlow).

Why not gRPC keepalive: TensorFlow passes `TF_GRPC_DEFAULT_OPTIONS` to its client channels only;
its servers keep gRPC's default ping policy (at most one ping per 5 minutes without data, then
GOAWAY "too_many_pings"), so a client keepalive short enough to matter would break collectives that
wait quietly for a slow peer. A TCP connect to the peer's port needs nothing from TensorFlow.

What is detected: a peer that *stops answering* (a cut link, a host that froze or vanished from the
network): its connects time out or fail with "no route". After `NPURUN_PEER_TIMEOUT` seconds
(default 60; 0 turns the watch off) without any answer the rank prints one line naming the peer and
exits with status 1, instead of waiting hccl_timeout (1800 s by default) in a collective. A link that
comes back within the timeout (a flap) is survived.
A peer process that exited or was killed (its host refuses the connect at once) is detected only
while this rank is *inside a training run* (`busy()`: NPUEstimator's training runs, the variable
broadcast, every run of a `cluster.create_session()` session): when such a run has been in progress
and the peer has refused connections, both for `NPURUN_PEER_TIMEOUT` seconds together, the run waits
for a peer that is gone (a collective whose other side was killed: TensorFlow notices that only when
this rank is the one pulling the data; a rank that sends, or that leads the group, would wait
hccl_timeout), and the rank stops the same way. A peer that finished training normally exits after
the last collective; this rank's remaining runs do not wait for it, and between runs (a checkpoint
saved by the Estimator, hooks' `end`) nothing is watched, so it does not fail the others.
What is not detected: a peer that is alive but hangs (its kernel still accepts connects): hccl_timeout
bounds that; a run of a `create_session()` session that lasts longer than the timeout after a peer
finished normally (for example a long checkpoint save there) is taken for a wait on that peer.

The watch runs while a distributed training session is open (`arm` after the start-up, `disarm` at
the session's end), in one daemon thread per process.
"""
from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import threading
import time
from typing import Callable, Optional, Sequence

DEFAULT_PEER_TIMEOUT = 60
_watch: Optional["PeerWatch"] = None
_lock = threading.Lock()
_busy_lock = threading.Lock()
_busy_depth = 0
_busy_since: Optional[float] = None  # monotonic time the outermost training run in progress began


@contextlib.contextmanager
def busy():
    """Mark a training run in progress (see the module doc: a refusing peer counts only then)."""
    global _busy_depth, _busy_since
    with _busy_lock:
        _busy_depth += 1
        if _busy_depth == 1:
            _busy_since = time.monotonic()
    try:
        yield
    finally:
        with _busy_lock:
            _busy_depth -= 1
            if _busy_depth == 0:
                _busy_since = None


def busy_since() -> Optional[float]:
    with _busy_lock:
        return _busy_since


def peer_timeout() -> float:
    """NPURUN_PEER_TIMEOUT in seconds (0: off); ValueError naming it when invalid."""
    text = os.environ.get("NPURUN_PEER_TIMEOUT", "").strip()
    if not text:
        return float(DEFAULT_PEER_TIMEOUT)
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise ValueError(f"environment variable NPURUN_PEER_TIMEOUT: got {text[:40]!r}; allowed: seconds, an int "
                         f">= 0 (0 turns the peer watch off)")
    return float(int(text))


def answers(address: str, timeout: float) -> bool:
    """Whether the host of `address` answers a TCP connect to it: accepted, or refused (the host is up)."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except ConnectionRefusedError:
        return True
    except OSError as err:
        if err.errno in (errno.ECONNREFUSED, errno.ECONNRESET):
            return True
        return False  # timed out, no route, network unreachable, name not resolved


def state(address: str, timeout: float) -> str:
    """"up" (the port accepts), "refused" (the host answers, nothing listens: the process is gone)
    or "silent" (no answer: timed out, no route)."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return "up"
    except ConnectionRefusedError:
        return "refused"
    except OSError as err:
        return "refused" if err.errno in (errno.ECONNREFUSED, errno.ECONNRESET) else "silent"


class PeerWatch(threading.Thread):
    """Connects to every peer every `interval` s; calls `on_lost(name, address, seconds, how)` once for
    the first peer that gave no answer for `timeout` s (how="silent"), or that refused connections
    while a training run was in progress, both for `timeout` s (how="refused")."""

    def __init__(self, peers: Sequence[tuple], timeout: float, on_lost: Callable, interval: Optional[float] = None):
        super().__init__(name="npurun-peer-watch", daemon=True)
        self.peers, self.timeout, self.on_lost = list(peers), timeout, on_lost
        self.interval = interval if interval is not None else max(0.5, min(5.0, timeout / 4))
        self.stopped = threading.Event()

    def run(self):
        last = {address: time.monotonic() for _, address in self.peers}
        refused_since: dict = {}
        while not self.stopped.wait(self.interval):
            for name, address in self.peers:
                if self.stopped.is_set():
                    return
                seen = state(address, min(2.0, self.interval))
                now = time.monotonic()
                if seen != "silent":
                    last[address] = now
                if seen != "refused":
                    refused_since.pop(address, None)
                if seen == "silent" and now - last[address] >= self.timeout:
                    self.on_lost(name, address, now - last[address], "silent")
                    return
                if seen == "refused":
                    since = refused_since.setdefault(address, now)
                    running = busy_since()
                    if running is not None and now - max(since, running) >= self.timeout:
                        self.on_lost(name, address, now - since, "refused")
                        return

    def stop(self):
        self.stopped.set()


def _exit_lost(who: str, timeout: float):
    def on_lost(name, address, seconds, how="silent"):
        if how == "refused":
            sys.stderr.write(f"npurun: {who}: {name} ({address}) is gone: its host refuses connections to its port "
                             f"(its process exited or was killed) while this rank has waited in a training run for "
                             f"{seconds:.0f} s (NPURUN_PEER_TIMEOUT={timeout:g}); stopping this process (exit status "
                             f"1) instead of waiting hccl_timeout in a collective\n")
        else:
            sys.stderr.write(f"npurun: {who}: {name} ({address}) has not answered for {seconds:.0f} s "
                             f"(NPURUN_PEER_TIMEOUT={timeout:g}): the network link to it is lost or its host is "
                             f"down; stopping this process (exit status 1) instead of waiting hccl_timeout in a "
                             f"collective\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(1)
    return on_lost


def arm(peers: Sequence[tuple], who: str) -> Optional[PeerWatch]:
    """Start the watch over `peers` ((name, address) pairs) unless it runs or is turned off."""
    global _watch
    timeout = peer_timeout()
    if timeout <= 0 or not peers:
        return None
    with _lock:
        if _watch is not None and _watch.is_alive():
            return _watch
        _watch = PeerWatch(peers, timeout, _exit_lost(who, timeout))
        _watch.start()
        return _watch


def disarm() -> None:
    global _watch
    with _lock:
        if _watch is not None:
            _watch.stop()
            _watch = None
