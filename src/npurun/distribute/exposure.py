"""Which addresses a server of this process listens on, and the one warning when that is beyond loopback.

Plain Python (no TensorFlow).

What TensorFlow allows (read in TensorFlow's source, checked on 2.21 with `ss -ltn`):
- `tf.distribute.Server` (GrpcServer::Init) always listens on `0.0.0.0:<port>`, which gRPC opens as
  the dual-stack wildcard `[::]`: every interface. The port comes from the task's ClusterSpec address
  (or ServerDef.port); the host part of that address is only what the other tasks dial. No ServerDef
  field, ConfigProto option or environment variable selects the listening address.
- the tf.data service (`DispatchServer`, `WorkerServer`) likewise listens on `0.0.0.0:<port>`;
  `WorkerConfig.worker_address` is only the address the worker advertises to the dispatcher.
- Neither server authenticates its callers: whoever reaches the port can run any op in the process.

TensorFlow itself cannot be told; bind_narrow.py's LD_PRELOAD shim narrows the wildcard binds to the
task's address when npurun starts the process (`npurun launch`, `npurun run` / `npurun train` under a
cluster). npurun checks where each one really listens (from
/proc/net/tcp and /proc/net/tcp6, so the warning never overstates or understates) and the job's
rank 0 prints one warning line when any of them is reachable beyond loopback and the task's own address. Setting
`NPURUN_EXPOSED_SERVERS_OK=1` (the network is private: a firewall, a Kubernetes NetworkPolicy, an
isolated fabric) silences it. docs/distributed.md, "Security", says what is exposed and to whom.
"""
from __future__ import annotations

import logging
import os
from typing import Iterable, Optional

logger = logging.getLogger("npurun")

ACK_ENV = "NPURUN_EXPOSED_SERVERS_OK"
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp*
_warned = False


def _ipv4(hex_word: str) -> str:
    raw = bytes.fromhex(hex_word)[::-1]  # the kernel prints the address as a host-order word
    return ".".join(str(b) for b in raw)


def _ipv6(hex_text: str) -> str:
    words = [bytes.fromhex(hex_text[i:i + 8])[::-1] for i in range(0, 32, 8)]
    raw = b"".join(words)
    if raw[:12] == b"\0" * 10 + b"\xff\xff":
        return "::ffff:" + ".".join(str(b) for b in raw[12:])
    import ipaddress

    return str(ipaddress.IPv6Address(raw))


def listening_addresses(port: int, proc_net: str = "/proc/net") -> Optional[list[str]]:
    """The local addresses of the TCP sockets listening on `port` in this network namespace;
    None when that cannot be read (not Linux)."""
    found = []
    readable = False
    for name, decode in (("tcp", _ipv4), ("tcp6", _ipv6)):
        try:
            with open(os.path.join(proc_net, name), encoding="ascii") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _LISTEN:
                continue
            address, _, port_hex = fields[1].partition(":")
            if int(port_hex, 16) == port:
                found.append(decode(address))
    return found if readable else None


def is_loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1",) or address.startswith("::ffff:127.")


def describe(addresses: Iterable[str]) -> str:
    shown = []
    for address in addresses:
        label = {"0.0.0.0": "0.0.0.0 (every IPv4 interface)", "::": "[::] (every interface)"}.get(address, address)
        if label not in shown:
            shown.append(label)
    return ", ".join(shown)


def job_addresses() -> tuple[str, ...]:
    """The job's own address as the kernel shows it (plain and v4-mapped) when this process's binds
    are narrowed to it (bind_narrow's preload is loaded and active); () otherwise."""
    from . import bind_narrow

    address = os.environ.get(bind_narrow.ADDRESS_ENV, "").strip()
    if not address or not bind_narrow.active():
        return ()
    return (address, "::ffff:" + address) if ":" not in address else (address,)


def exposed(ports: Iterable[int], proc_net: str = "/proc/net") -> list[tuple[int, str]]:
    """(port, where) of each port listening beyond loopback and the job's own address; a port whose
    sockets cannot be read counts as exposed on every interface (TensorFlow's behaviour)."""
    result = []
    own = job_addresses()

    def fine(address):
        return is_loopback(address) or address in own

    for port in ports:
        addresses = listening_addresses(port, proc_net)
        if addresses is None or not addresses:
            result.append((port, "every interface (as TensorFlow binds; not verified here)"))
        elif not all(fine(a) for a in addresses):
            result.append((port, describe(a for a in addresses if not fine(a))))
    return result


def warning_text(what: str, found: list[tuple[int, str]]) -> str:
    where = "; ".join(f"port {port} on {place}" for port, place in found)
    return (f"{what} listen beyond loopback ({where}) without authentication: anyone who can reach these ports "
            f"can run operations in the job's processes. `npurun launch` and `npurun run` bind them to the task's "
            f"address only (with a C compiler, cc or gcc; not a plain `python script.py`, not with NPURUN_BIND_ANY=1); "
            f"else keep the job on a private network or firewall the ports (docs/distributed.md, Security; {ACK_ENV}=1 silences this)")


def warn_if_exposed(what: str, ports: Iterable[int], speaker: bool = True) -> Optional[str]:
    """Print the warning once per process if any of `ports` listens beyond loopback and this
    process is the job's speaker (rank 0); returns the text (also when not printed), or None."""
    global _warned
    found = exposed(list(ports))
    if not found:
        return None
    text = warning_text(what, found)
    if speaker and not _warned and os.environ.get(ACK_ENV, "").strip() not in ("1", "true", "yes"):
        _warned = True
        logger.warning(text)
    return text
