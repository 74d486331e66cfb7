"""Ranks from the environments cluster managers set: Slurm (`srun`), torchrun, Open MPI.

Plain Python (no TensorFlow), the lowest layer: `config.cluster` (is_chief) and
`distribute.ranks` (the rank layout) both read it.

Managers read, innermost launcher first (torchrun started by srun sees both; its own variables win):
- torchrun / torch.distributed `env://`: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (optional),
  MASTER_ADDR, MASTER_PORT, GROUP_RANK (the node index, optional).
- Open MPI (`mpirun`): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
  OMPI_COMM_WORLD_LOCAL_SIZE, OMPI_COMM_WORLD_NODE_RANK (optional).
- Slurm (`srun`): SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), SLURM_LOCALID,
  SLURM_NODEID, SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST, expanded as `scontrol show hostnames`
  does), SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE, e.g. `2(x3),1`) and
  SLURM_DISTRIBUTION (block, the default, or cyclic). Read only inside a job step (SLURM_STEP_ID
  set by srun): a batch script's own environment describes the allocation, not running ranks.

Hosts: Slurm names the node of every rank. torchrun and Open MPI do not; when every rank is on one
host (the local size equals the world size) the ranks are local, else NPURUN_HOSTS (the hosts in
node order, comma separated, each running the same number of ranks) must name them: npurun never
guesses a peer's address.

Environments of managers npurun does not read (Ascend's CM_* rank-table-free variables, MPICH /
Intel MPI PMI_*, PMIx, MVAPICH, Horovod) are refused by `unread_manager` when no source npurun reads
is set, instead of training alone as rank 0 of 1.

Every number is ASCII digits (`str.isdigit` would take "²" and "٣"); every error is a
`ClusterEnvError` naming the variable, its value and what is allowed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

MAX_HOSTS = 65536  # a nodelist expanding past this is refused (a typo such as node[1-99999999])
_DIGITS = re.compile(r"[0-9]{1,18}")


class ClusterEnvError(ValueError):
    """A cluster environment variable is invalid or inconsistent (the message names it)."""


def _q(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def env_int(environ: Mapping[str, str], name: str, minimum: int = 0) -> Optional[int]:
    """The variable as an int of ASCII digits (None when unset or empty)."""
    text = environ.get(name, "").strip()
    if not text:
        return None
    if not _DIGITS.fullmatch(text) or int(text) < minimum:
        raise ClusterEnvError(f"environment variable {name}: got {_q(text)}; allowed: an int >= {minimum} "
                              f"(ASCII digits)")
    return int(text)


def expand_nodelist(text: str, name: str = "SLURM_JOB_NODELIST") -> list[str]:
    """`node[01-03,7],gpu5` -> node01 node02 node03 node7 gpu5, as `scontrol show hostnames` prints.

    Rules: comma-separated items outside brackets; each `[...]` holds comma-separated numbers or
    `lo-hi` ranges (lo <= hi), zero-padded to the width of `lo`; several bracket groups in one item
    expand as their product; at most MAX_HOSTS names.
    """
    items, depth, current = [], 0, ""
    for char in text.strip():
        if char == "[":
            depth += 1
            if depth > 1:
                raise ClusterEnvError(f"environment variable {name}: nested '[' in {_q(text)}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ClusterEnvError(f"environment variable {name}: unbalanced ']' in {_q(text)}")
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise ClusterEnvError(f"environment variable {name}: unbalanced '[' in {_q(text)}")
    items.append(current)
    hosts: list[str] = []
    for item in items:
        item = item.strip()
        if not item:
            raise ClusterEnvError(f"environment variable {name}: empty host name in {_q(text)}")
        names = [""]
        for part in re.split(r"(\[[^\]]*\])", item):
            if part.startswith("["):
                numbers = _expand_range(part[1:-1], name, text)
                if len(names) * len(numbers) + len(hosts) > MAX_HOSTS:
                    raise ClusterEnvError(f"environment variable {name}: {_q(text)} expands to more than "
                                          f"{MAX_HOSTS} hosts")
                names = [n + number for n in names for number in numbers]
            else:
                if not re.fullmatch(r"[A-Za-z0-9._-]*", part):
                    raise ClusterEnvError(f"environment variable {name}: {_q(part)} in {_q(text)} is not a host "
                                          f"name (letters, digits, '.', '_', '-')")
                names = [n + part for n in names]
        hosts.extend(names)
    return hosts


def _expand_range(body: str, name: str, text: str) -> list[str]:
    numbers = []
    for piece in body.split(","):
        piece = piece.strip()
        lo, dash, hi = piece.partition("-")
        if not _DIGITS.fullmatch(lo) or (dash and not _DIGITS.fullmatch(hi)):
            raise ClusterEnvError(f"environment variable {name}: [{body}] in {_q(text)}: {_q(piece)} is not a number "
                                  f"or a range lo-hi of ASCII digits")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first:
            raise ClusterEnvError(f"environment variable {name}: range {piece} in {_q(text)} runs backwards")
        if last - first + 1 + len(numbers) > MAX_HOSTS:
            raise ClusterEnvError(f"environment variable {name}: {_q(text)} expands to more than {MAX_HOSTS} hosts")
        numbers.extend(str(n).zfill(len(lo)) for n in range(first, last + 1))
    return numbers


def expand_tasks_per_node(text: str, name: str = "SLURM_TASKS_PER_NODE") -> list[int]:
    """`2(x3),1` -> [2, 2, 2, 1] (Slurm's compressed tasks-per-node list)."""
    counts: list[int] = []
    for item in text.strip().split(","):
        match = re.fullmatch(r"\s*([0-9]{1,9})\s*(?:\(x([0-9]{1,9})\))?\s*", item)
        if not match:
            raise ClusterEnvError(f"environment variable {name}: {_q(item)} in {_q(text)} is not N or N(xR)")
        repeat = int(match.group(2) or 1)
        if repeat + len(counts) > MAX_HOSTS:
            raise ClusterEnvError(f"environment variable {name}: {_q(text)} names more than {MAX_HOSTS} nodes")
        counts.extend([int(match.group(1))] * repeat)
    return counts


@dataclass(frozen=True)
class ManagerRanks:
    """What a cluster manager's environment says about this process.

    `hosts`: the host of every rank, by rank ('' for this host: every rank is local).
    `variables`: the variables read, for messages.
    """

    manager: str
    rank_id: int
    rank_size: int
    local_rank_id: int
    hosts: tuple
    variables: str


_TORCH = ("RANK", "WORLD_SIZE")
_OMPI = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
_SLURM = ("SLURM_PROCID",)


def read_manager(environ: Mapping[str, str]) -> Optional[ManagerRanks]:
    """The ranks a cluster manager's variables describe, or None when none is present."""
    if any(environ.get(n, "").strip() for n in _TORCH):
        return _generic(environ, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")
    if any(environ.get(n, "").strip() for n in _OMPI):
        return _generic(environ, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK")
    if environ.get("SLURM_PROCID", "").strip() and (environ.get("SLURM_STEP_ID", "").strip()
                                                     or environ.get("SLURM_STEPID", "").strip()):
        return _slurm(environ)
    return None


def _generic(environ, manager, rank_var, size_var, local_var, local_size_var, node_var) -> ManagerRanks:
    rank, size = env_int(environ, rank_var), env_int(environ, size_var, 1)
    if rank is None or size is None:
        missing, present = (rank_var, size_var) if rank is None else (size_var, rank_var)
        raise ClusterEnvError(f"{manager}: environment variable {present} is set but {missing} is not; "
                              f"both are needed")
    if rank >= size:
        raise ClusterEnvError(f"{manager}: {rank_var}={rank} is out of range for {size_var}={size}")
    local = env_int(environ, local_var)
    local_size = env_int(environ, local_size_var, 1)
    names = f"{rank_var}/{size_var}"
    if local_size is None and local is not None and size == 1:
        local_size = 1
    if local_size is None:
        # every rank local, unless the manager says otherwise (MASTER_ADDR names another host)
        local_size = size if local in (None, rank) else None
        if local_size is None:
            raise ClusterEnvError(f"{manager}: {local_var}={local} differs from {rank_var}={rank}, so the ranks span "
                                  f"several hosts, but {local_size_var} is not set")
    local = rank % local_size if local is None else local
    if local >= local_size:
        raise ClusterEnvError(f"{manager}: {local_var}={local} is out of range for {local_size_var}={local_size}")
    if local_size == size:
        return ManagerRanks(manager, rank, size, local, ("",) * size, names)
    if size % local_size:
        raise ClusterEnvError(f"{manager}: {size_var}={size} is not a multiple of {local_size_var}={local_size}; "
                              f"npurun needs the same number of ranks on every host")
    nodes = size // local_size
    node = env_int(environ, node_var)
    if node is None:
        node = rank // local_size
    if node != rank // local_size or local != rank % local_size:
        raise ClusterEnvError(f"{manager}: {rank_var}={rank} with {local_size_var}={local_size} is node "
                              f"{rank // local_size}, local rank {rank % local_size}; the environment says node "
                              f"{node} ({node_var}), local rank {local} ({local_var}): npurun needs the ranks "
                              f"numbered host by host")
    hosts_text = environ.get("NPURUN_HOSTS", "").strip()
    if not hosts_text:
        raise ClusterEnvError(f"{manager}: {size_var}={size} ranks on {nodes} hosts ({local_size_var}={local_size}), "
                              f"but {manager}'s environment names no host but MASTER_ADDR: set NPURUN_HOSTS to the "
                              f"{nodes} hosts in node order (e.g. NPURUN_HOSTS=host0,host1), or use TF_CONFIG")
    hosts = [h.strip() for h in hosts_text.split(",")]
    if len(hosts) != nodes or not all(hosts):
        raise ClusterEnvError(f"environment variable NPURUN_HOSTS: got {_q(hosts_text)}; allowed: {nodes} host "
                              f"names, comma separated ({size_var}={size} / {local_size_var}={local_size})")
    return ManagerRanks(manager, rank, size, local, tuple(hosts[r // local_size] for r in range(size)),
                        names + "/" + local_size_var + "/NPURUN_HOSTS")


def _slurm(environ) -> ManagerRanks:
    rank = env_int(environ, "SLURM_PROCID")
    size_var = "SLURM_STEP_NUM_TASKS" if environ.get("SLURM_STEP_NUM_TASKS", "").strip() else "SLURM_NTASKS"
    size = env_int(environ, size_var, 1)
    if size is None:
        raise ClusterEnvError("Slurm: SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS says how "
                              "many tasks the step has")
    if rank >= size:
        raise ClusterEnvError(f"Slurm: SLURM_PROCID={rank} is out of range for {size_var}={size}")
    list_var = "SLURM_STEP_NODELIST" if environ.get("SLURM_STEP_NODELIST", "").strip() else "SLURM_JOB_NODELIST"
    if not environ.get(list_var, "").strip():
        raise ClusterEnvError(f"Slurm: SLURM_PROCID is set but SLURM_STEP_NODELIST / SLURM_JOB_NODELIST is not: "
                              f"npurun needs the nodes of the step")
    nodes = expand_nodelist(environ[list_var], list_var)
    per_var = "SLURM_STEP_TASKS_PER_NODE" if environ.get("SLURM_STEP_TASKS_PER_NODE", "").strip() \
        else "SLURM_TASKS_PER_NODE"
    if environ.get(per_var, "").strip():
        counts = expand_tasks_per_node(environ[per_var], per_var)
        if len(counts) != len(nodes):
            raise ClusterEnvError(f"Slurm: {per_var}={_q(environ[per_var])} gives {len(counts)} nodes but "
                                  f"{list_var}={_q(environ[list_var])} has {len(nodes)}")
    elif size % len(nodes) == 0:
        counts = [size // len(nodes)] * len(nodes)
    else:
        raise ClusterEnvError(f"Slurm: {size_var}={size} tasks on {len(nodes)} nodes and no SLURM_TASKS_PER_NODE "
                              f"saying how many run on each")
    if sum(counts) != size:
        raise ClusterEnvError(f"Slurm: {per_var}={_q(environ[per_var])} adds up to {sum(counts)} tasks but "
                              f"{size_var}={size}")
    distribution = environ.get("SLURM_DISTRIBUTION", "").strip().split(":")[0].split(",")[0] or "block"
    hosts: list[str] = []
    if distribution == "cyclic":
        left = list(counts)
        while len(hosts) < size:
            for i, node in enumerate(nodes):
                if left[i]:
                    hosts.append(node)
                    left[i] -= 1
    elif distribution in ("block", "plane", "arbitrary", "pack", "nopack"):
        if distribution not in ("block", "pack", "nopack"):
            raise ClusterEnvError(f"Slurm: SLURM_DISTRIBUTION={_q(environ['SLURM_DISTRIBUTION'])} is not supported "
                                  f"(block or cyclic); start the step with --distribution=block")
        for node, count in zip(nodes, counts):
            hosts.extend([node] * count)
    else:
        raise ClusterEnvError(f"Slurm: SLURM_DISTRIBUTION={_q(environ['SLURM_DISTRIBUTION'])} is not supported "
                              f"(block or cyclic)")
    same = [r for r, host in enumerate(hosts) if host == hosts[rank]]
    local = env_int(environ, "SLURM_LOCALID")
    node_id = env_int(environ, "SLURM_NODEID")
    if local is not None and local != same.index(rank):
        raise ClusterEnvError(f"Slurm: SLURM_LOCALID={local} but SLURM_PROCID={rank} is local task "
                              f"{same.index(rank)} of {hosts[rank]} by {list_var} and {per_var} "
                              f"(distribution {distribution})")
    if node_id is not None and (node_id >= len(nodes) or nodes[node_id] != hosts[rank]):
        raise ClusterEnvError(f"Slurm: SLURM_NODEID={node_id} but SLURM_PROCID={rank} runs on {hosts[rank]} by "
                              f"{list_var} and {per_var} (distribution {distribution})")
    if len(nodes) == 1:
        hosts = [""] * size  # one node: the ranks talk over loopback
    return ManagerRanks("Slurm", rank, size, same.index(rank), tuple(hosts),
                        f"SLURM_PROCID/{size_var}/{list_var}")


# Cluster environments npurun does not read: (a variable that marks one, the variable giving its
# size (a size of 1 is a single process, not refused), what it is).
UNREAD = (
    ("CM_WORKER_SIZE", "CM_WORKER_SIZE", "Ascend's rank-table-free cluster variables (CM_*)"),
    ("CM_CHIEF_IP", "CM_WORKER_SIZE", "Ascend's rank-table-free cluster variables (CM_*)"),
    ("CM_WORKER_IP", "CM_WORKER_SIZE", "Ascend's rank-table-free cluster variables (CM_*)"),
    ("PMI_RANK", "PMI_SIZE", "MPICH / Intel MPI (PMI_RANK, PMI_SIZE)"),
    ("PMI_SIZE", "PMI_SIZE", "MPICH / Intel MPI (PMI_RANK, PMI_SIZE)"),
    ("PMIX_RANK", "PMIX_SIZE", "PMIx (PMIX_RANK)"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MVAPICH (MV2_COMM_WORLD_*)"),
    ("HOROVOD_RANK", "HOROVOD_SIZE", "Horovod (HOROVOD_RANK, HOROVOD_SIZE)"),
    ("HOROVOD_SIZE", "HOROVOD_SIZE", "Horovod (HOROVOD_RANK, HOROVOD_SIZE)"),
)


def unread_manager(environ: Mapping[str, str]) -> Optional[str]:
    """A sentence naming a cluster environment npurun does not read, or None.

    A variable counts when it could mean several processes: set, and its manager's size variable
    is not 1.
    """
    for name, size_name, what in UNREAD:
        text = environ.get(name, "").strip()
        if not text or environ.get(size_name, "").strip() == "1":
            continue
        return (f"environment variable {name}={_q(text)} is set: {what}, which npurun does not read. Without "
                f"TF_CONFIG, RANK_TABLE_FILE, RANK_ID/RANK_SIZE, Slurm (srun), torchrun or Open MPI variables "
                f"this process would train alone as rank 0 of 1; set one of those (or unset {name} for a single "
                f"process)")
    if environ.get("SLURM_PROCID", "").strip() and not (environ.get("SLURM_STEP_ID", "").strip()
                                                         or environ.get("SLURM_STEPID", "").strip()):
        size = environ.get("SLURM_NTASKS", "").strip()
        if size and size != "1":
            return (f"environment variable SLURM_NTASKS={_q(size)} is set but this is not an srun job step "
                    f"(no SLURM_STEP_ID): start the ranks with `srun npurun run SCRIPT` (or `srun python SCRIPT`), "
                    f"or set RANK_SIZE=1 to train as one process")
    return None
