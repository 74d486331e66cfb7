"""The TensorFlow runtime under the ranks: one gRPC server per rank, and a bounded start-up.

Each rank runs a `tf.distribute.Server` in one ClusterSpec; collective ops travel between the
servers (ring on CPU, NCCL on GPU). The session is created on the local server with
`ConfigProto.experimental.collective_group_leader` naming rank 0 (the leader hands out the step
ids and group membership) and `device_filters` naming only this task, so that creating a session
never waits for the other tasks (as MultiWorkerMirroredStrategy does).

Start-up is bounded in two steps, because TensorFlow alone would wait forever: a non-leader's
first collective run retries `GetStepSequence` against the leader with no deadline.
1. `wait_for_peers`: every other rank's server port must accept a TCP connection within the
   start-up timeout (HCCL_CONNECT_TIMEOUT, default 120 s); else `StartupTimeoutError` naming the
   ranks and addresses that never came up.
2. `barrier`: one all-reduce of a scalar run in a helper thread; if it has not returned within the
   start-up timeout, `StartupTimeoutError` (covers a peer whose port opened and which then died).

Addresses: `TF_CONFIG` when set (its jobs are used as they are); otherwise derived from the ranks:
the host of each rank (rank table `server_id`, or 127.0.0.1) and port `NPURUN_BASE_PORT` (default
29600) + local rank id.
"""
from __future__ import annotations

import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from . import ranks as ranks_mod
from . import settings
from .errors import (CollectiveTimeoutError, ServerStartError, StartupIdentityError, StartupTimeoutError, explained,
                     tf_reason)

DEFAULT_BASE_PORT = 29600
RANK_JOBS = ("chief", "master", "worker")  # the jobs whose tasks are ranks, in rank order


@dataclass(frozen=True)
class Layout:
    """The cluster this process belongs to and where each rank runs.

    Attributes:
      cluster: job name -> task addresses (the ClusterSpec).
      task_type, task_id: this process's task.
      rank_tasks: (job, index) of every rank, by rank id.
      rank_id: this process's rank, None for a task that is not a rank (ps).
    """

    cluster: Mapping[str, tuple]
    task_type: str
    task_id: int
    rank_tasks: tuple
    rank_id: Optional[int]

    @property
    def rank_size(self) -> int:
        return len(self.rank_tasks)

    @property
    def local_task(self) -> str:
        return f"/job:{self.task_type}/replica:0/task:{self.task_id}"

    def rank_device(self, rank: int) -> str:
        job, index = self.rank_tasks[rank]
        return f"/job:{job}/replica:0/task:{index}"

    @property
    def leader(self) -> str:
        return self.rank_device(0)

    @property
    def address(self) -> str:
        return self.cluster[self.task_type][self.task_id]

    @property
    def target(self) -> str:
        return "grpc://" + self.address

    def peer_tasks(self) -> list[tuple[str, str, tuple]]:
        """(name, address, (job, index)) of every other task this process needs (see `peers`)."""
        found = []
        for rank, (job, index) in enumerate(self.rank_tasks):
            if (job, index) != (self.task_type, self.task_id):
                found.append((f"rank {rank}", self.cluster[job][index], (job, index)))
        for index, address in enumerate(self.cluster.get("ps", ())):
            if ("ps", index) != (self.task_type, self.task_id):
                found.append((f"ps {index}", address, ("ps", index)))
        return found

    def task_name(self, job: str, index: int) -> str:
        if (job, index) in self.rank_tasks:
            return f"rank {self.rank_tasks.index((job, index))}"
        return f"{job} {index}"

    def peers(self) -> list[tuple[str, str]]:
        """(name, address) of every other task this process needs: the other ranks and any ps tasks."""
        found = []
        for rank, (job, index) in enumerate(self.rank_tasks):
            if (job, index) != (self.task_type, self.task_id):
                found.append((f"rank {rank}", self.cluster[job][index]))
        for index, address in enumerate(self.cluster.get("ps", ())):
            if ("ps", index) != (self.task_type, self.task_id):
                found.append((f"ps {index}", address))
        return found


def read_layout(environ: Mapping[str, str] = os.environ) -> Layout:
    """The Layout from TF_CONFIG, or derived from the rank variables (see the module doc)."""
    raw = environ.get("TF_CONFIG", "").strip()
    tf_config = ranks_mod.parse_tf_config(raw) if raw else {"cluster": {}, "task": {}}
    cluster = {job: addresses for job, addresses in tf_config["cluster"].items() if job != "evaluator"}
    if cluster:
        task_type, task_id = tf_config["task"]["type"] or "worker", tf_config["task"]["index"]
        # An evaluator task is outside the cluster (tf.estimator's rule): it evaluates alone.
        if task_type != "evaluator" and (task_type not in cluster or not 0 <= task_id < len(cluster[task_type])):
            raise ranks_mod.RankConfigError(f"environment variable TF_CONFIG: task {task_type!r} {task_id} is not a "
                                            f"task of the cluster ({', '.join(sorted(cluster))})")
        rank_tasks = tuple((job, i) for job in RANK_JOBS for i in range(len(cluster.get(job, ()))))
        rank_id = rank_tasks.index((task_type, task_id)) if (task_type, task_id) in rank_tasks else None
        if rank_id is not None:
            ranks_mod.read_ranks(environ)  # raises if RANK_ID / RANK_SIZE / the rank table disagree
        return Layout(cluster, task_type, task_id, rank_tasks, rank_id)
    info = ranks_mod.read_ranks(environ)
    base = _base_port(environ)
    addresses = tuple(f"{host or '127.0.0.1'}:{base + _local_index(info.hosts, r)}"
                      for r, host in enumerate(info.hosts))
    return Layout({"worker": addresses}, "worker", info.rank_id,
                  tuple(("worker", r) for r in range(info.rank_size)), info.rank_id)


def _base_port(environ: Mapping[str, str]) -> int:
    text = environ.get("NPURUN_BASE_PORT", "").strip()
    if not text:
        return DEFAULT_BASE_PORT
    if not (text.isascii() and text.isdigit()) or len(text) > 5 or not 0 < int(text) < 65536:
        raise ranks_mod.RankConfigError(f"environment variable NPURUN_BASE_PORT: got {text[:40]!r}; allowed: a port "
                                        f"number 1..65535")
    return int(text)


def _local_index(hosts, rank: int) -> int:
    return [r for r, host in enumerate(hosts) if host == hosts[rank]].index(rank)


def who(layout: Layout) -> str:
    """`rank R of N` (or the task, for a ps) for messages."""
    if layout.rank_id is not None:
        return f"rank {layout.rank_id} of {layout.rank_size}"
    return f"{layout.task_type} {layout.task_id}"


def is_distributed(layout: Optional[Layout] = None) -> bool:
    """Whether this process has peers (more than one rank, or parameter servers)."""
    layout = layout or read_layout()
    return layout.rank_size > 1 or bool(layout.cluster.get("ps"))


def narrow_binds() -> None:
    """`npurun run` / `npurun train`, before TensorFlow is imported: under a cluster, re-exec once with
    bind_narrow's preload so this task's servers listen on its own address only (see bind_narrow.py)."""
    from . import bind_narrow

    def task_host():
        layout = read_layout()
        return layout.address.rsplit(":", 1)[0] if is_distributed(layout) else None

    bind_narrow.reexec_if_needed(task_host)


# ---- the server and the session config -----------------------------------------------------------
_server = None
_server_layout: Optional[Layout] = None


def configure(config=None, layout: Optional[Layout] = None, runs_per_step: int = 1):
    """A copy of `config` (or a new ConfigProto) set up for collectives among the ranks of `layout`.

    hccl_timeout is enforced here, per session run, not per collective op: `operation_timeout_in_ms`
    = hccl_timeout x `runs_per_step` (the collective steps one run holds: iterations_per_loop), unless
    `config` sets its own (op_wait_timeout). TensorFlow's per-op `timeout_seconds` would start two
    detached threads per collective op run, each sleeping the whole timeout (see collectives.py).
    The run deadline cancels a run whose collective waits for a lost peer (DeadlineExceeded,
    explained as CollectiveTimeoutError by `errors`), with no thread per run.
    """
    import tensorflow as tf

    layout = layout or read_layout()
    proto = tf.compat.v1.ConfigProto()
    if config is not None:
        proto.CopyFrom(config)
    if layout.rank_size:
        proto.experimental.collective_group_leader = layout.leader
    # Only this task (and the parameter servers, which hold the variables in PS mode): the session
    # never waits for the other ranks, whose liveness `wait_for_peers` checks with a deadline.
    del proto.device_filters[:]
    proto.device_filters.append(layout.local_task)
    if layout.cluster.get("ps") and layout.task_type != "ps":
        proto.device_filters.append("/job:ps")
    if tf.config.list_physical_devices("GPU"):
        proto.experimental.collective_nccl = True
    if (layout.rank_size or 0) > 1 and not layout.cluster.get("ps") and not proto.operation_timeout_in_ms:
        proto.operation_timeout_in_ms = int(settings.collective_timeout() * 1000 * max(1, int(runs_per_step)))
    return proto


def ensure_server(config=None, layout: Optional[Layout] = None):
    """This process's tf.distribute.Server, started on first call (one per process, as TensorFlow allows).

    Raises RuntimeError if asked for a different cluster than the running server's.
    """
    import tensorflow as tf

    global _server, _server_layout
    layout = layout or read_layout()
    if _server is not None:
        if (dict(_server_layout.cluster), _server_layout.task_type, _server_layout.task_id) != (
                dict(layout.cluster), layout.task_type, layout.task_id):
            raise RuntimeError(f"a TensorFlow server for {_server_layout.local_task} of "
                               f"{dict(_server_layout.cluster)} already runs in this process; a process can "
                               f"serve one cluster only")
        return _server
    proto = configure(config, layout)
    spec = tf.train.ClusterSpec({job: list(addresses) for job, addresses in layout.cluster.items()})
    try:
        _server = tf.distribute.Server(spec, job_name=layout.task_type, task_index=layout.task_id,
                                       config=proto, start=True)
    except tf.errors.UnknownError as err:
        raise ServerStartError(f"cannot start the TensorFlow server of {layout.local_task} on {layout.address}: "
                           f"{str(err).splitlines()[0]} (is the port in use?)") from None
    _server_layout = layout
    from . import exposure

    # TensorFlow binds every interface whatever the ClusterSpec says (see exposure.py): say so, once
    # per job (rank 0; a job of ps tasks only has its ps 0 speak).
    speaker = layout.rank_id == 0 or (layout.rank_size == 0 and (layout.task_type, layout.task_id) == ("ps", 0))
    exposure.warn_if_exposed("the TensorFlow servers of this job (every task binds as this one does, a tf.data "
                             "feeding service too)", [int(layout.address.rsplit(":", 1)[1])], speaker=speaker)
    return _server


# ---- bounded start-up ---------------------------------------------------------------------------
def _reachable(address: str, timeout: float = 0.5) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_peers(layout: Optional[Layout] = None, timeout: Optional[float] = None) -> float:
    """Wait until every peer's server accepts connections; the seconds it took.

    Raises StartupTimeoutError naming the peers still unreachable after `timeout` seconds
    (default: the start-up timeout, HCCL_CONNECT_TIMEOUT); then `check_identity`: a
    StartupIdentityError when two processes claim one task or the rank counts differ.
    """
    layout = layout or read_layout()
    timeout = settings.startup_timeout() if timeout is None else timeout
    start = time.monotonic()
    missing = layout.peers()
    while missing:
        missing = [(name, address) for name, address in missing if not _reachable(address)]
        elapsed = time.monotonic() - start
        if missing and elapsed >= timeout:
            who = f"rank {layout.rank_id} of {layout.rank_size}" if layout.rank_id is not None else layout.local_task
            raise StartupTimeoutError(
                f"{who}: {', '.join(f'{name} ({address})' for name, address in missing)} did not start within the "
                f"start-up timeout of {timeout:g} s (HCCL_CONNECT_TIMEOUT): check that every rank was launched "
                f"with the same TF_CONFIG / RANK_SIZE and that the hosts can reach each other",
                missing=tuple(name for name, _ in missing))
        if missing:
            time.sleep(0.1)
    if layout.peers():
        check_identity(layout)
    return time.monotonic() - start


_DEVICE_TASK = re.compile(r"/job:([^/]+)/replica:\d+/task:(\d+)/")


def _is_own(address: str, layout: Layout) -> bool:
    """Whether `address` is served by this process: its port is ours and its host one of this machine's."""
    host, port = address.rsplit(":", 1)
    if port != layout.address.rsplit(":", 1)[1]:
        return False
    try:
        infos = socket.getaddrinfo(host.strip("[]"), None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    for family, _, _, _, sockaddr in infos:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((sockaddr[0], 0))  # succeeds only for an address of this machine
            return True
        except OSError:
            continue
    return False


def _linger(seconds: float) -> None:
    """Keep this process's server up a moment before failing, so that the other claimant's own
    probe reaches it and fails with the same explanation (not a start-up timeout)."""
    if seconds > 0:
        time.sleep(seconds)


def check_identity(layout: Optional[Layout] = None, timeout: float = 5.0, linger: float = 5.0) -> None:
    """Ask every peer's server which task it is and whether its cluster has more ranks than ours;
    `StartupIdentityError` naming both processes when two claim one task or the rank counts differ.

    How (TensorFlow has no "who are you" call): a session on the peer's own master with a device
    filter naming the first task past this process's rank job (`/job:worker/replica:0/task:<n>`).
    A master always lists its own devices, named after the task it serves; with the same cluster,
    no other device matches the filter. A device of task n, or a listing that does not return
    within `timeout` (the peer's master is waiting for its task n), means the peer's cluster has
    more ranks than ours. Each probe is one round trip (~0.2 s on loopback). Before raising, the
    server stays up `linger` seconds so that the other process's probe finds this one too.
    """
    import tensorflow as tf

    layout = layout or read_layout()
    job = layout.rank_tasks[-1][0] if layout.rank_tasks else "worker"
    beyond = (job, len(layout.cluster.get(job, ())))
    me = f"{layout.task_name(layout.task_type, layout.task_id)} ({layout.address}, pid {os.getpid()} on " \
         f"{socket.gethostname()})"
    config = tf.compat.v1.ConfigProto(device_filters=[f"/job:{beyond[0]}/replica:0/task:{beyond[1]}"])
    for name, address, task in layout.peer_tasks():
        outcome: dict = {}

        def probe():
            try:
                graph = tf.Graph()
                with graph.as_default():
                    nothing = tf.no_op(name="npurun_identity_probe")
                with tf.compat.v1.Session("grpc://" + address, graph=graph, config=config) as session:
                    session.run(nothing)  # creates the session (ListDevices alone warns that it does)
                    outcome["devices"] = [d.name for d in session.list_devices()]
            except Exception as err:  # noqa: BLE001 - a peer that went away is the barrier's to report
                outcome["error"] = err

        thread = threading.Thread(target=probe, name="npurun-identity-probe", daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            _linger(linger)
            raise StartupIdentityError(
                f"{me}: {name} at {address} describes a cluster with more ranks than this process's "
                f"{layout.rank_size} (its server waits for {layout.task_name(*beyond) if beyond in layout.rank_tasks else f'{beyond[0]} {beyond[1]}'}, which this "
                f"process's cluster does not have): every host must be started with the same rank count "
                f"(-n / --hosts, TF_CONFIG, RANK_SIZE)", missing=(name,))
        if "devices" not in outcome:
            continue
        tasks = {(m.group(1), int(m.group(2))) for m in map(_DEVICE_TASK.search, outcome["devices"]) if m}
        if beyond in tasks:
            _linger(linger)
            raise StartupIdentityError(
                f"{me}: {name} at {address} describes a cluster with more ranks than this process's "
                f"{layout.rank_size}: every host must be started with the same rank count (-n / --hosts, "
                f"TF_CONFIG, RANK_SIZE)", missing=(name,))
        claimed = sorted(t for t in tasks if t != beyond)
        if claimed and task not in claimed:
            other = ", ".join(f"{layout.task_name(*t)} (/job:{t[0]}/task:{t[1]})" for t in claimed)
            if _is_own(address, layout):
                where = (f"{name}'s address {address} is this machine's and this process's port: this process "
                         f"runs where {name} should, while it is {other.split(' (')[0]} by its environment")
            else:
                where = f"the process at {address}, where the cluster places {name}, says it is {other}"
            _linger(linger)
            raise StartupIdentityError(
                f"{me}: {where}: two processes claim {other.split(' (')[0]}. Check that every host was started "
                f"with its own --node-rank (or TF_CONFIG task index / RANK_ID)", missing=(name,))


def barrier_op(timeout: Optional[int] = None, payload=None):
    """An op that completes when every rank ran it (see `collectives.barrier`), in the default graph;
    with `payload` (int32 values, the same length on every rank) a tensor: their sum over the ranks."""
    import tensorflow as tf

    from .collectives import barrier

    with tf.name_scope("npurun_startup_barrier"):
        return barrier(timeout or settings.startup_timeout(), payload)


def run_barrier(session, op, layout: Optional[Layout] = None, timeout: Optional[float] = None,
                on_value=None, feed_dict=None) -> float:
    """Run `op` (from `barrier_op`) with a deadline; the seconds it took. `on_value`, when given, is
    called with what the run returned (the summed payload of a barrier built with one).

    The run happens in a helper thread because a run that waits for the leader's step ids has no
    deadline in TensorFlow; if it has not returned after `timeout`, StartupTimeoutError (the
    thread is left behind: the process is expected to exit).
    """
    layout = layout or read_layout()
    timeout = settings.startup_timeout() if timeout is None else timeout
    outcome: dict = {}

    import tensorflow as tf

    # The barrier's bound is the start-up timeout, not the session's run deadline (hccl_timeout).
    options = tf.compat.v1.RunOptions(timeout_in_ms=int((timeout + 1.0) * 1000))

    def run():
        try:
            outcome["value"] = session.run(op, feed_dict=feed_dict, options=options)
            outcome["ok"] = True
        except BaseException as err:  # reported in the calling thread
            outcome["error"] = err

    start = time.monotonic()
    thread = threading.Thread(target=run, name="npurun-startup-barrier", daemon=True)
    thread.start()
    thread.join(timeout + 2.0)  # the op's own timeout fires first when the peers are reachable
    who = f"rank {layout.rank_id} of {layout.rank_size}"
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, CollectiveTimeoutError) and error.__cause__ is not None:
            error = error.__cause__  # explained by a DistributedSession: report TensorFlow's own error
        raise StartupTimeoutError(f"{who}: not every rank joined the start-up barrier within {timeout:g} s "
                                  f"(HCCL_CONNECT_TIMEOUT): a rank stopped or is unreachable. TensorFlow "
                                  f"({type(error).__name__}): {tf_reason(error)}") from error
    if not outcome.get("ok"):
        raise StartupTimeoutError(f"{who}: the start-up barrier did not complete within {timeout:g} s "
                                  f"(HCCL_CONNECT_TIMEOUT): rank 0 ({layout.cluster[layout.rank_tasks[0][0]][0]}) "
                                  f"is not answering")
    if on_value is not None:
        on_value(outcome.get("value"))
    return time.monotonic() - start


_session_class = None


def session_class():
    """`DistributedSession`: a tf.compat.v1.Session whose `run` raises a collective that lost a peer
    as `CollectiveTimeoutError` naming this rank, the rank size and hccl_timeout (`errors.explained`).

    `DistributedSession(target, graph, config, settings=None, run_deadline=False)`: `settings` (a
    DistributeSettings, default the current ones when the session is created) gives the hccl_timeout
    named; `run_deadline`: `config.operation_timeout_in_ms` is hccl_timeout's (`configure` set it),
    so a run that times out is a collective failure too.
    """
    global _session_class
    if _session_class is None:
        import tensorflow as tf

        from . import settings as settings_mod

        class DistributedSession(tf.compat.v1.Session):
            __doc__ = session_class.__doc__

            def __init__(self, target="", graph=None, config=None, settings=None, run_deadline=False):
                super().__init__(target, graph=graph, config=config)
                self.settings = settings if settings is not None else settings_mod.current()
                self.run_deadline = bool(run_deadline)

            def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
                from . import watchdog

                with explained(self.settings, self.run_deadline), watchdog.busy():
                    return super().run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)

            def close(self):
                from . import watchdog

                watchdog.disarm()
                super().close()

        _session_class = DistributedSession
    return _session_class


def create_session(config=None, graph=None, timeout: Optional[float] = None):
    """A session on this rank's server, after a bounded start-up; for sess.run scripts.

    The session is a `DistributedSession` (see `session_class`): a collective that loses a peer in
    any `run` is a `CollectiveTimeoutError` naming this rank, the rank size and hccl_timeout.
    With one rank it runs in process. Otherwise: start the server, wait for the peers
    (`wait_for_peers`), create the session on the server with `configure(config)`, and run a
    start-up barrier (built in `graph`, which must not be finalized).
    """
    import tensorflow as tf

    layout = read_layout()
    session_type = session_class()
    if not is_distributed(layout):
        return session_type(graph=graph, config=config)
    proto = configure(config, layout)
    # configure's hccl_timeout run deadline, unless `config` brought its own operation_timeout_in_ms
    deadline = bool(proto.operation_timeout_in_ms) and not (config is not None and config.operation_timeout_in_ms)
    server = ensure_server(proto, layout)
    wait_for_peers(layout, timeout)
    graph = graph or tf.compat.v1.get_default_graph()
    if layout.rank_id is None:
        return session_type(server.target, graph=graph, config=proto, run_deadline=deadline)
    with graph.as_default():
        op = barrier_op(int(timeout) if timeout else None)
    session = session_type(server.target, graph=graph, config=proto, run_deadline=deadline)
    run_barrier(session, op, layout, timeout)
    from . import watchdog

    watchdog.arm(layout.peers(), who(layout))  # disarmed when the session closes
    return session
