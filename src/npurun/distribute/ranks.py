"""Rank discovery with the Ascend adapter's names: which rank this process is, and of how many.

Plain Python (no TensorFlow), so input pipelines and configuration code can call it freely, as
Ascend scripts do (`dataset.shard(get_rank_size(), get_rank_id())`).

Sources, read from the environment on every call (tests and launchers change it):

- `TF_CONFIG` with a cluster: the ranks are the chief (if any) then the workers, in the order
  tf.estimator numbers them (`global_id_in_cluster`); the rank size is their number. Ranks whose
  addresses share a host are local to each other. A `ps` or `evaluator` task has no rank.
- `RANK_TABLE_FILE`: an Ascend rank table, version 1.0 (`server_list`, each server a `server_id`,
  its address, and a `device` list of `{device_id, device_ip, rank_id}`) or 1.2 (`server_id` a
  name such as node_0, the address in `host_ip`); any other version is an error. The rank size is
  the number of devices; the local ranks of a rank are the devices of its server, ordered by rank
  id. This process's rank is `RANK_ID` (or the cluster manager's rank; required unless the table
  has one device).
- `RANK_ID` / `RANK_SIZE`: all ranks on this host.
- a cluster manager's variables (Slurm's srun, torchrun, Open MPI; see `npurun.config.managers`),
  read when neither RANK_ID/RANK_SIZE nor TF_CONFIG is set.
- none of them: rank 0 of 1, unless the environment of a cluster manager npurun does not read is
  present (CM_*, PMI_*, ...): then a RankConfigError naming it, instead of training alone.

Rules: every source that is set must agree (rank id and rank size); a disagreement is a
`RankConfigError` naming the variables and their values. `RANK_ID` must be < the rank size.
`RANK_SIZE` without `RANK_ID` is allowed only when it is 1; `RANK_ID` alone only when it is 0.
Numbers are ASCII digits only.
"""
from __future__ import annotations

import warnings

import json
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from ..config import managers
from ..config.cluster import tf_config_task_index
from ..config.managers import ClusterEnvError

WORLD_GROUP = "hccl_world_group"
MAX_GROUP_NAME = 127  # HCCL: 128 bytes including the terminator


class RankConfigError(ClusterEnvError):
    """The rank environment (RANK_ID, RANK_SIZE, RANK_TABLE_FILE, TF_CONFIG, a cluster manager's
    variables) is invalid or inconsistent."""


MAX_RANK_TABLE_BYTES = 16 * 1024 * 1024  # a rank table of 100k devices is ~10 MB
RANK_TABLE_VERSIONS = ("1.0", "1.2")


@dataclass(frozen=True)
class RankInfo:
    """This process's place among the ranks of the world group.

    Attributes:
      rank_id, rank_size: this rank and the number of ranks.
      local_rank_id, local_rank_size: the same among the ranks of this host.
      hosts: the host of every rank, by rank id ('' when unknown: all on this host).
      addresses: `host:port` of every rank's TensorFlow server when the source names them (TF_CONFIG),
        else None (npurun derives ports, see `npurun.distribute.cluster`).
      source: which variables the answer came from, for messages.
      server_ids: rank table only: the server_id of every rank.
      host_origin: where `hosts` came from, for messages (e.g. "rank table v1.2 host_ip").
    """

    rank_id: int = 0
    rank_size: int = 1
    local_rank_id: int = 0
    local_rank_size: int = 1
    hosts: tuple = ("",)
    addresses: Optional[tuple] = None
    source: str = "default (no RANK_ID, RANK_SIZE, RANK_TABLE_FILE, TF_CONFIG or cluster manager)"
    server_ids: tuple = field(default=())
    host_origin: str = ""


def _int_var(environ: Mapping[str, str], name: str) -> Optional[int]:
    try:
        return managers.env_int(environ, name)
    except ClusterEnvError as err:
        raise RankConfigError(str(err)) from None


def _local_of(hosts: Sequence[str], rank_id: int) -> tuple[int, int]:
    """Index of `rank_id` among the ranks on its host, and how many ranks that host has."""
    same = [r for r, host in enumerate(hosts) if host == hosts[rank_id]]
    return same.index(rank_id), len(same)


def parse_tf_config(raw: str) -> dict:
    """TF_CONFIG as {"cluster": {job: tuple of "host:port"}, "task": {"type", "index"}}; every shape
    error is a RankConfigError naming TF_CONFIG (a bounded parse: nesting and size are limited)."""
    if len(raw) > MAX_RANK_TABLE_BYTES:
        raise RankConfigError(f"environment variable TF_CONFIG: {len(raw)} characters; allowed: at most "
                              f"{MAX_RANK_TABLE_BYTES}")
    try:
        tf_config = json.loads(raw)
    except RecursionError:
        raise RankConfigError("environment variable TF_CONFIG is nested too deeply to be a TF_CONFIG") from None
    except ValueError as err:
        raise RankConfigError(f"environment variable TF_CONFIG is not valid JSON: {err}") from None
    if not isinstance(tf_config, dict):
        raise RankConfigError("environment variable TF_CONFIG: expected a JSON object with 'cluster' and 'task'")
    cluster_raw = tf_config.get("cluster") or {}
    if not isinstance(cluster_raw, dict):
        raise RankConfigError("environment variable TF_CONFIG: 'cluster' must map job names to lists of addresses")
    cluster = {}
    for job, addresses in cluster_raw.items():
        if not isinstance(addresses, list) or not all(isinstance(a, str) and a.strip() for a in addresses):
            raise RankConfigError(f"environment variable TF_CONFIG: job {job!r} must be a list of 'host:port' "
                                  f"strings")
        for address in addresses:
            host, colon, port = address.rpartition(":")
            if not colon or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
                raise RankConfigError(f"environment variable TF_CONFIG: job {job!r} address {address[:80]!r} is not "
                                      f"HOST:PORT with a port in 1..65535")
        cluster[job] = tuple(addresses)
    task = tf_config.get("task") or {}
    if not isinstance(task, dict):
        raise RankConfigError("environment variable TF_CONFIG: 'task' must be an object with 'type' and 'index'")
    task_type = task.get("type")
    if task_type is not None and not isinstance(task_type, str):
        raise RankConfigError(f"environment variable TF_CONFIG: task type {task_type!r} must be a job name")
    try:
        task_id = tf_config_task_index(task.get("index", 0))
    except ValueError as err:
        raise RankConfigError(str(err)) from None
    return {"cluster": cluster, "task": {"type": task_type, "index": task_id}}


def _from_tf_config(raw: str) -> Optional[dict]:
    """rank_id, hosts, addresses from TF_CONFIG; None when it describes no cluster."""
    tf_config = parse_tf_config(raw)
    cluster = {job: a for job, a in tf_config["cluster"].items() if job != "evaluator"}
    if not cluster:
        return None
    task_type, task_id = tf_config["task"]["type"], tf_config["task"]["index"]
    addresses = [*cluster.get("chief", ()), *cluster.get("master", ()), *cluster.get("worker", ())]
    if task_type in ("ps", "evaluator"):
        raise RankConfigError(f"TF_CONFIG: this process is a {task_type!r} task, which has no rank; only chief "
                              f"and worker tasks are ranks")
    order = [job for job in ("chief", "master", "worker") if job in cluster]
    if task_type not in order:
        raise RankConfigError(f"TF_CONFIG: task type {task_type!r} is not a rank job of the cluster "
                              f"({', '.join(sorted(cluster))})")
    offset = sum(len(cluster[job]) for job in order[:order.index(task_type)])
    if not 0 <= task_id < len(cluster[task_type]):
        raise RankConfigError(f"TF_CONFIG: task index {task_id!r} is out of range for job {task_type!r}")
    return {"rank_id": offset + task_id, "addresses": tuple(addresses),
            "hosts": tuple(a.rsplit(":", 1)[0] for a in addresses)}


_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}"
                   r"[A-Za-z0-9])?)*\.?")


def _is_address(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text.strip("[]"))
        return True
    except ValueError:
        return bool(_HOST.fullmatch(text))


def read_rank_table_servers(path: str) -> tuple[str, list[tuple[int, str, str, str]]]:
    """(version, devices) of an Ascend rank table; each device (rank_id, server_id, device_id, host).

    Versions: "1.0" (or no version): `server_id` is the server's address. "1.2": `server_id` is a
    name (such as node_0) and the address is the server's `host_ip`. Any other version is refused.
    Rules: valid JSON of at most MAX_RANK_TABLE_BYTES with a non-empty `server_list`; every device
    has an ASCII-digit `rank_id`; the rank ids are exactly 0..n-1.
    """
    where = f"RANK_TABLE_FILE {path[:200]!r}"
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_RANK_TABLE_BYTES + 1)
    except OSError as err:
        raise RankConfigError(f"environment variable RANK_TABLE_FILE: cannot read {path[:200]!r}: "
                              f"{err.strerror}") from None
    except ValueError as err:  # an embedded NUL
        raise RankConfigError(f"environment variable RANK_TABLE_FILE: {path[:200]!r} is not a path: {err}") from None
    if len(data) > MAX_RANK_TABLE_BYTES:
        raise RankConfigError(f"{where}: larger than {MAX_RANK_TABLE_BYTES} bytes; not a rank table")
    try:
        table = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise RankConfigError(f"{where}: nested too deeply to be a rank table") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise RankConfigError(f"{where} is not valid JSON: {err}") from None
    servers = table.get("server_list") if isinstance(table, dict) else None
    if not isinstance(servers, list) or not servers:
        raise RankConfigError(f"{where}: expected a JSON object with a non-empty 'server_list'")
    version = str(table.get("version", "1.0")).strip()
    if version not in RANK_TABLE_VERSIONS:
        raise RankConfigError(f"{where}: version {version[:40]!r} is not supported; allowed: "
                              f"{', '.join(RANK_TABLE_VERSIONS)} (1.0: server_id is the address; 1.2: server_id is "
                              f"a name and host_ip the address)")
    devices = []
    for server in servers:
        if not isinstance(server, dict):
            raise RankConfigError(f"{where}: every server_list entry must be an object; got {str(server)[:80]!r}")
        server_id = str(server.get("server_id", ""))[:200]
        if version == "1.2":
            host = server.get("host_ip")
            if not isinstance(host, str) or not _is_address(host):
                raise RankConfigError(f"{where}: version 1.2 server {server_id!r} needs 'host_ip', its address "
                                      f"(server_id is only a name there); got {str(host)[:80]!r}")
        else:
            host = server_id
            if not _is_address(host):
                raise RankConfigError(f"{where}: version 1.0 takes server_id as the server's address, and "
                                      f"{server_id!r} is not a host name or IP address (a version 1.2 table names "
                                      f"the server freely and gives the address in host_ip)")
        device_list = server.get("device") or []
        if not isinstance(device_list, list):
            raise RankConfigError(f"{where}: server {server_id!r}: 'device' must be a list")
        for device in device_list:
            text = str(device.get("rank_id", "")) if isinstance(device, dict) else ""
            if not (text.isascii() and text.isdigit()) or len(text) > 9:
                raise RankConfigError(f"{where}: server {server_id!r} has a device without an integer 'rank_id' "
                                      f"({str(device)[:80]})")
            devices.append((int(text), server_id, str(device.get("device_id", ""))[:40], host))
    devices.sort()
    if [d[0] for d in devices] != list(range(len(devices))):
        shown = sorted(d[0] for d in devices)
        raise RankConfigError(f"{where}: the rank ids must be 0..{len(devices) - 1} without gaps or repeats; got "
                              f"{shown if len(shown) <= 20 else str(shown[:20])[:-1] + ', ...]'}")
    return version, devices


def read_rank_table(path: str) -> list[tuple[int, str, str]]:
    """The devices of an Ascend rank table as (rank_id, server_id, device_id), by rank id (see
    `read_rank_table_servers` for the rules and versions)."""
    return [(rank, server, device) for rank, server, device, _ in read_rank_table_servers(path)[1]]


def read_ranks(environ: Mapping[str, str] = os.environ) -> RankInfo:
    """This process's RankInfo from the environment; `RankConfigError` if it is invalid or inconsistent."""
    try:
        return _read_ranks(environ)
    except RankConfigError:
        raise
    except ClusterEnvError as err:
        raise RankConfigError(str(err)) from None


def _read_ranks(environ: Mapping[str, str]) -> RankInfo:
    env_rank, env_size = _int_var(environ, "RANK_ID"), _int_var(environ, "RANK_SIZE")
    claims = []  # (source name, rank_id or None, rank_size), checked for agreement below
    if env_rank is not None or env_size is not None:
        claims.append(("RANK_ID/RANK_SIZE", env_rank, env_size))

    tf_part = _from_tf_config(environ["TF_CONFIG"]) if environ.get("TF_CONFIG", "").strip() else None
    if tf_part is not None:
        claims.append(("TF_CONFIG", tf_part["rank_id"], len(tf_part["addresses"])))

    # A cluster manager's variables are read when npurun's own (RANK_ID/RANK_SIZE, TF_CONFIG) are
    # absent: `npurun launch` inside an allocation sets its own, which win.
    manager = managers.read_manager(environ) if not claims else None
    if manager is not None:
        claims.append((f"{manager.manager} ({manager.variables})", manager.rank_id, manager.rank_size))

    table = None
    table_path = environ.get("RANK_TABLE_FILE", "").strip()
    if table_path:
        table_version, table = read_rank_table_servers(table_path)
        claims.append(("RANK_TABLE_FILE", None, len(table)))

    if not claims:
        unread = managers.unread_manager(environ)
        if unread:
            raise RankConfigError(unread)

    _check_agreement(claims, env_rank, env_size)
    sizes = [size for _, _, size in claims if size is not None]
    rank_size = sizes[0] if sizes else (1 if env_rank in (None, 0) else None)
    ids = [rank for _, rank, _ in claims if rank is not None]
    rank_id = ids[0] if ids else None
    if rank_size is None:
        raise RankConfigError(f"environment variable RANK_ID={env_rank} needs RANK_SIZE (or a RANK_TABLE_FILE or "
                              f"TF_CONFIG cluster) saying how many ranks there are")
    if rank_id is None:
        if rank_size != 1:
            raise RankConfigError(f"{claims[0][0]} describes {rank_size} ranks but not which one this process is: "
                                  f"set RANK_ID")
        rank_id = 0
    if rank_size == 1 and rank_id and [name for name, _, _ in claims] == ["RANK_ID/RANK_SIZE"]:
        # Ascend's one-device run reads no RANK_ID: launch scripts export the device's number there
        # (`RANK_ID=$ASCEND_DEVICE_ID`, 16 ModelZoo folders; Vega's single-NPU trainer sets RANK_ID=DEVICE_ID beside
        # RANK_SIZE=1). With nothing else describing a cluster, that run is rank 0 of one (said once: not silent).
        warnings.warn(f"RANK_ID={rank_id} with RANK_SIZE=1 and no other cluster variable: one process, run as rank 0 "
                      f"(Ascend launch scripts export the device's number as RANK_ID for a one-device run)",
                      UserWarning, stacklevel=2)
        rank_id = 0
    if rank_id >= rank_size:
        raise RankConfigError(f"RANK_ID={rank_id} is out of range: the rank size is {rank_size} "
                              f"(from {', '.join(name for name, _, size in claims if size is not None)})")

    source = " + ".join(name for name, _, _ in claims) or RankInfo.source
    server_ids, origin = (), ""
    if tf_part is not None:
        hosts, addresses, origin = tf_part["hosts"], tf_part["addresses"], "TF_CONFIG"
    elif table is not None:
        server_ids = tuple(server for _, server, _, _ in table)
        hosts, addresses = tuple(host for _, _, _, host in table), None
        origin = (f"rank table v{table_version} " + ("host_ip" if table_version == "1.2" else "server_id"))
    elif manager is not None:
        hosts, addresses, origin = manager.hosts, None, manager.manager
    else:
        hosts, addresses = ("",) * rank_size, None
    local_id, local_size = _local_of(hosts, rank_id)
    return RankInfo(rank_id=rank_id, rank_size=rank_size, local_rank_id=local_id, local_rank_size=local_size,
                    hosts=tuple(hosts), addresses=addresses, source=source, server_ids=server_ids,
                    host_origin=origin)


def _check_agreement(claims, env_rank, env_size) -> None:
    named = [(name, size) for name, _, size in claims if size is not None]
    if len({size for _, size in named}) > 1:
        raise RankConfigError("the rank size differs between sources: "
                              + ", ".join(f"{name} says {size}" for name, size in named))
    named_ids = [(name, rank) for name, rank, _ in claims if rank is not None]
    if len({rank for _, rank in named_ids}) > 1:
        raise RankConfigError("the rank id differs between sources: "
                              + ", ".join(f"{name} says {rank}" for name, rank in named_ids)
                              + " (TF_CONFIG numbers the chief first, then the workers)")
    if env_size is not None and env_rank is None and env_size != 1 and len(named_ids) == 0:
        raise RankConfigError(f"environment variable RANK_SIZE={env_size} needs RANK_ID (which rank this process is)")


# ---- groups ---------------------------------------------------------------------------------------
# name -> world rank ids, in group-rank order. Every rank must create the same groups in the same
# order (as with HCCL), so that group keys agree across processes.
_GROUPS: dict[str, tuple[int, ...]] = {}


def create_group(group: str, rank_num: int, rank_ids: Sequence[int]) -> None:
    """Create a user group of world ranks (HCCL's `create_group`).

    Rules (HCCL's): `group` is a non-empty name of at most 127 characters, not `hccl_world_group`,
    not already created; `rank_ids` are `rank_num` distinct world ranks; the calling rank must be one
    of them.
    """
    if not isinstance(group, str) or not group or len(group) > MAX_GROUP_NAME:
        raise ValueError(f"create_group: group must be a name of 1..{MAX_GROUP_NAME} characters; got {group!r}")
    if group == WORLD_GROUP:
        raise ValueError(f"create_group: {WORLD_GROUP!r} is the default group and cannot be created")
    if group in _GROUPS:
        raise ValueError(f"create_group: group {group!r} already exists")
    ids = tuple(int(r) for r in rank_ids)
    world = read_ranks()
    if len(ids) != rank_num or len(set(ids)) != len(ids):
        raise ValueError(f"create_group({group!r}): rank_ids {list(ids)} must be {rank_num} distinct ranks")
    if any(not 0 <= r < world.rank_size for r in ids):
        raise ValueError(f"create_group({group!r}): rank_ids {list(ids)} must be world ranks in "
                         f"[0, {world.rank_size - 1}]")
    if world.rank_id not in ids:
        raise ValueError(f"create_group({group!r}): this process (rank {world.rank_id}) is not in rank_ids "
                         f"{list(ids)}")
    _GROUPS[group] = ids


def destroy_group(group: str) -> None:
    """Forget a user group (HCCL's `destroy_group`); the world group cannot be destroyed."""
    if group == WORLD_GROUP:
        raise ValueError(f"destroy_group: {WORLD_GROUP!r} cannot be destroyed")
    if _GROUPS.pop(group, None) is None:
        raise ValueError(f"destroy_group: no group named {group!r}")


def group_members(group: str = WORLD_GROUP) -> tuple[int, ...]:
    """The world ranks of `group`, in group-rank order."""
    if group == WORLD_GROUP:
        return tuple(range(read_ranks().rank_size))
    try:
        return _GROUPS[group]
    except KeyError:
        raise ValueError(f"no group named {group!r}: create it with create_group first "
                         f"(known: {', '.join([WORLD_GROUP, *_GROUPS])})") from None


def group_key(group: str = WORLD_GROUP) -> int:
    """The TensorFlow collective group key of `group`: 1 for the world group, else derived from the
    name and the members, so every member computes the same key whatever other groups it created."""
    if group == WORLD_GROUP:
        return 1
    members = group_members(group)
    return 2 + zlib.crc32(f"{group}:{','.join(map(str, members))}".encode()) % (2 ** 30)


def get_rank_size(group: str = WORLD_GROUP) -> int:
    """The number of ranks in `group`."""
    return len(group_members(group))


def get_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's rank in `group`."""
    return get_group_rank_from_world_rank(read_ranks().rank_id, group)


def get_local_rank_size(group: str = WORLD_GROUP) -> int:
    """How many ranks of `group` are on this process's host."""
    info = read_ranks()
    members = group_members(group)
    return sum(1 for r in members if info.hosts[r] == info.hosts[info.rank_id])


def get_local_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's index among the ranks of `group` on its host."""
    info = read_ranks()
    local = [r for r in group_members(group) if info.hosts[r] == info.hosts[info.rank_id]]
    if info.rank_id not in local:
        raise ValueError(f"rank {info.rank_id} is not a member of group {group!r}")
    return local.index(info.rank_id)


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    """The world rank of the rank numbered `group_rank_id` in `group`."""
    members = group_members(group)
    if not 0 <= group_rank_id < len(members):
        raise ValueError(f"group {group!r} has ranks 0..{len(members) - 1}; got {group_rank_id}")
    return members[group_rank_id]


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    """The rank of world rank `world_rank_id` within `group`."""
    members = group_members(group)
    if world_rank_id not in members:
        raise ValueError(f"world rank {world_rank_id} is not a member of group {group!r} (members {list(members)})")
    return members.index(world_rank_id)
