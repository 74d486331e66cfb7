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
What is not: a peer process that exited or was killed (its host refuses the connect at once):
TensorFlow's own RPCs fail within a second then, and a peer that finished training normally must not
fail the others; a peer that is alive but hangs (its kernel still accepts connects): hccl_timeout
bounds that.

The watch runs while a distributed training session is open (`arm` after the start-up, `disarm` at
the session's end), in one daemon thread per process.
"""
from __future__ import annotations

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
    """Connects to every peer every `interval` s; calls `on_lost(name, address, silent_for)` once
    for the first peer that gave no answer for `timeout` s."""

    def __init__(self, peers: Sequence[tuple], timeout: float, on_lost: Callable, interval: Optional[float] = None):
        super().__init__(name="npurun-peer-watch", daemon=True)
        self.peers, self.timeout, self.on_lost = list(peers), timeout, on_lost
        self.interval = interval if interval is not None else max(0.5, min(5.0, timeout / 4))
        self.stopped = threading.Event()

    def run(self):
        last = {address: time.monotonic() for _, address in self.peers}
        while not self.stopped.wait(self.interval):
            for name, address in self.peers:
                if self.stopped.is_set():
                    return
                if answers(address, min(2.0, self.interval)):
                    last[address] = time.monotonic()
                elif time.monotonic() - last[address] >= self.timeout:
                    self.on_lost(name, address, time.monotonic() - last[address])
                    return

    def stop(self):
        self.stopped.set()


def _exit_lost(who: str, timeout: float):
    def on_lost(name, address, silent_for):
        sys.stderr.write(f"npurun: {who}: {name} ({address}) has not answered for {silent_for:.0f} s "
                         f"(NPURUN_PEER_TIMEOUT={timeout:g}): the network link to it is lost or its host is down; "
                         f"stopping this process (exit status 1) instead of waiting hccl_timeout in a collective\n")
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
