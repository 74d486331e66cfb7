"""`npurun launch -n N script.py [args]`: start N ranks of a training script on this machine.

Each rank is `python script.py args` with RANK_ID, RANK_SIZE and TF_CONFIG (a `worker` job of N
tasks; with `--ps K` also a `ps` job), NPURUN_FEED_PORT (the host's input-feeding service, see
feed.py) and, with `--startup-timeout`, HCCL_CONNECT_TIMEOUT. On one host the ports are free
ports named as 127.0.0.1 in TF_CONFIG (TensorFlow's servers listen on every interface regardless:
see distribute/exposure.py). Out-of-range flags are one error line, exit status 2.

Rules:
- Every output line of a task is printed with its prefix, `[rank i] ` (or `[ps i] `), stdout to
  stdout and stderr to stderr.
- TensorFlow's C++ start-up banner and INFO lines are dropped from the tasks' stderr (the tasks
  get TF_CPP_MIN_LOG_LEVEL=1 unless it is set), as `npurun train` drops them; `-v` /
  NPURUN_VERBOSE=1 keeps them.
- When a rank (or a ps task) exits with a non-zero status, the launcher says which
  (`npurun launch: rank 1 failed: exited with status 3 ...`), every other task is stopped (SIGTERM,
  then SIGKILL after `--grace` seconds) and the launcher exits with that status (128 + signal
  number for a task killed by a signal). A rank that exits 0 is done; when every rank is done the
  ps tasks are stopped and the launcher exits 0 (with --hosts, when workers run on other hosts,
  the ps tasks end by themselves once every worker of the job has finished: see ps.py).
- SIGINT / SIGTERM to the launcher stop every task; the exit status is 128 + the signal. The
  ranks get the signal once, from the launcher (NPUEstimator then stops every rank after the same
  run and the chief saves: give it `--grace` seconds for the run in flight and the checkpoint).
- A rank that exits with status 143 / 130 was preempted in order (NPUEstimator's SIGTERM / SIGINT
  handling: the ranks agree to stop, the chief saves): it is not a failure, and the launcher waits
  (at most PREEMPTED_WAIT s) for the other ranks to stop the same way, then stops the ps tasks and
  exits with that status, saying so in one line. A rank *killed* by a signal is a failure.
- Every task gets NPURUN_LAUNCHED=1: a scheduler that signals every process of the job reaches a
  rank twice, directly and through the launcher; a rank counts the two as one preemption (see
  npurun/preemption.py).
- Several hosts: `--hosts h1:2,h2:2` gives the hosts and how many ranks each runs (ranks are
  numbered host by host); ports are `--base-port` + local index on every host (parameter servers
  after the ranks on the first host, then the feeding service's port). This invocation runs the
  ranks of host `--node-rank` (default 0) and first prints the command to run on each other host.

Plain Python: the launcher does not import TensorFlow.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .. import logs
from . import bind_narrow

DEFAULT_BASE_PORT = 29600
PREEMPTED_STATUSES = (128 + signal.SIGTERM, 128 + signal.SIGINT)  # an orderly stop (see the module rules)
PREEMPTED_WAIT = 300.0  # seconds the other ranks get to stop after one was preempted


@dataclass
class Task:
    """One process of the launch: a rank (job worker) or a parameter server."""

    job: str
    index: int
    host: str
    port: int
    env: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"rank {self.index}" if self.job == "worker" else f"ps {self.index}"

    @property
    def prefix(self) -> str:
        return f"[{self.label}] "

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports that were free on `host` a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


# A host name or IPv4 address (ASCII letters, digits, '.', '-', '_'), or an IPv6 address in brackets.
_HOST = re.compile(r"[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]")
# Tasks one launcher starts on its host: each is a TensorFlow process holding a port (and a few
# hundred MB); the bound keeps a typo (-n 100000000) one error line instead of exhausting the host.
MAX_TASKS_PER_HOST = 1024


def parse_hosts(text: str) -> list[tuple[str, int]]:
    """`h1:2,h2:2` -> [("h1", 2), ("h2", 2)]; a host without `:slots` runs one rank."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, _, slots = item.rpartition(":") if ":" in item else (item, "", "1")
        if not (slots.isascii() and slots.isdigit()) or len(slots) > 6 or int(slots) < 1 or not host:
            raise ValueError(f"--hosts: {item!r} is not HOST:RANKS with RANKS >= 1")
        if not _HOST.fullmatch(host):
            raise ValueError(f"--hosts: {host!r} is not a host name or address (allowed: ASCII letters, digits, "
                             f"'.', '-', '_', or an IPv6 address in brackets)")
        if int(slots) > MAX_TASKS_PER_HOST:
            raise ValueError(f"--hosts: {item!r}: at most {MAX_TASKS_PER_HOST} ranks per host")
        hosts.append((host, int(slots)))
    if not hosts:
        raise ValueError("--hosts: no host given")
    return hosts


def plan_tasks(n: int, ps: int = 0, hosts: Optional[list] = None, base_port: int = DEFAULT_BASE_PORT) -> list[Task]:
    """Every task of the launch with its address and environment (ranks first, then ps tasks)."""
    if n < 1:
        raise ValueError(f"-n: got {n}; allowed: an int >= 1")
    if ps < 0:
        raise ValueError(f"--ps: got {ps}; allowed: an int >= 0")
    if hosts is None and n + ps > MAX_TASKS_PER_HOST:
        raise ValueError(f"-n {n} --ps {ps}: {n + ps} tasks on this host; allowed: at most {MAX_TASKS_PER_HOST} "
                         f"(ranks and ps tasks together)")
    tasks = []
    feed_ports = {}  # host -> the port of its input-feeding service (local_rank_id, see feed.py)
    if hosts is None:
        ports = free_ports(n + ps + 1)
        tasks = [Task("worker", i, "127.0.0.1", ports[i]) for i in range(n)]
        tasks += [Task("ps", i, "127.0.0.1", ports[n + i]) for i in range(ps)]
        feed_ports["127.0.0.1"] = ports[-1]
    else:
        if sum(slots for _, slots in hosts) != n:
            raise ValueError(f"--hosts gives {sum(s for _, s in hosts)} ranks but -n is {n}")
        rank = 0
        for host, slots in hosts:
            for local in range(slots):
                tasks.append(Task("worker", rank, host, base_port + local))
                rank += 1
        highest = base_port + max(slots for _, slots in hosts) + ps
        if highest > 65535:
            raise ValueError(f"--base-port {base_port}: the ports of this launch run up to {highest}, past 65535")
        first, first_slots = hosts[0]
        tasks += [Task("ps", i, first, base_port + first_slots + i) for i in range(ps)]
        for host, slots in hosts:
            feed_ports[host] = base_port + slots + (ps if host == first else 0)
    cluster = {"worker": [t.address for t in tasks if t.job == "worker"]}
    if ps:
        cluster["ps"] = [t.address for t in tasks if t.job == "ps"]
    for task in tasks:
        task.env = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task.job, "index": task.index}}),
                    "RANK_SIZE": str(n), "NPURUN_FEED_PORT": str(feed_ports[task.host])}
        if task.job == "worker":
            task.env["RANK_ID"] = str(task.index)
    return tasks


def other_host_commands(args, hosts: list) -> list[tuple[str, str]]:
    """(host, command) for every host but this one: the same launch with that host's --node-rank."""
    commands = []
    for i, (host, _) in enumerate(hosts):
        if i == args.node_rank:
            continue
        argv = ["-n", str(args.nproc), "--hosts", args.hosts, "--node-rank", str(i), "--base-port", str(args.base_port)]
        if args.ps:
            argv += ["--ps", str(args.ps)]
        if args.startup_timeout is not None:
            argv += ["--startup-timeout", str(args.startup_timeout)]
        argv += [args.script, *args.args]
        commands.append((host, "npurun launch " + " ".join(shlex.quote(a) for a in argv)))
    return commands


class _Prefixer(threading.Thread):
    """Copies a task's output stream line by line, each line prefixed, to `sink`."""

    lock = threading.Lock()

    def __init__(self, stream, prefix: str, sink, keep=None):
        super().__init__(daemon=True)
        self.stream, self.prefix, self.sink = stream, prefix, sink
        self.keep = keep or (lambda line: True)

    def run(self):
        for raw in iter(self.stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if not self.keep(line):
                continue
            with self.lock:
                self.sink.write(self.prefix + line + "\n")
                self.sink.flush()
        self.stream.close()


def _signal_name(code: int) -> str:
    if code >= 0:
        return ""
    try:
        return f", killed by {signal.Signals(-code).name}"
    except ValueError:
        return ""


def _status(code: int) -> int:
    return 128 - code if code < 0 else code  # Popen gives -N for "killed by signal N"


class Launch:
    """Runs tasks, prefixes their output, stops them all on the first failure."""

    def __init__(self, tasks: list[Task], command: list[str], grace: float = 5.0, extra_env: Optional[dict] = None,
                 stdout=None, stderr=None):
        self.tasks, self.command, self.grace = tasks, command, grace
        self.extra_env = extra_env or {}
        self.stdout, self.stderr = stdout or sys.stdout, stderr or sys.stderr
        self.procs: dict = {}
        self.threads: list = []
        self._signal: Optional[int] = None
        self.remote_workers = 0  # workers of the job on other hosts (set by cmd_launch with --hosts)
        self._waiting_note = False

    def _note(self, text: str) -> None:
        with _Prefixer.lock:
            self.stderr.write(f"npurun launch: {text}\n")
            self.stderr.flush()

    def start(self) -> None:
        # Quiet as `npurun train` is: TensorFlow's C++ INFO lines (and its start-up banner, which no
        # setting hides) are dropped from the ranks' stderr unless detail was asked for.
        min_level = logs.native_min_level()

        def keep_stderr(line):
            return logs.keep_native_line(line, min_level)

        for task in self.tasks:
            env = dict(os.environ)
            for name in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE"):
                env.pop(name, None)
            env.update(self.extra_env)
            env.update(task.env)
            env["NPURUN_LAUNCHED"] = "1"
            address = bind_narrow.local_address(task.host)
            if address is not None:
                bind_narrow.preload_env(address, env)  # its servers bind the task's address, not every interface
            env.setdefault("PYTHONUNBUFFERED", "1")  # lines reach the prefixer as they are printed
            env.setdefault("TF_CPP_MIN_LOG_LEVEL", str(min_level))
            proc = subprocess.Popen(self.command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            self.procs[task.label] = (task, proc)
            for stream, sink, keep in ((proc.stdout, self.stdout, None), (proc.stderr, self.stderr, keep_stderr)):
                thread = _Prefixer(stream, task.prefix, sink, keep)
                thread.start()
                self.threads.append(thread)

    def stop_all(self, reason: str) -> None:
        running = [(t, p) for t, p in self.procs.values() if p.poll() is None]
        if running:
            self._note(f"{reason}; stopping {', '.join(t.label for t, _ in running)}")
        for _, proc in running:
            self._signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for _, proc in running:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal_group(proc, signal.SIGKILL)
                proc.wait()

    @staticmethod
    def _signal_group(proc, sig) -> None:
        # Each task leads its own process group (start_new_session): stop what it started too.
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _on_signal(self, signum, frame) -> None:
        self._signal = signum

    def run(self) -> int:
        """Start, supervise, and return the launch's exit status."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            status = self._supervise()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        for thread in self.threads:
            thread.join(timeout=5)
        return status

    def _supervise(self) -> int:
        ranks = [label for label, (task, _) in self.procs.items() if task.job == "worker"]
        preempted = None  # (status, when) of the first rank that stopped in order after a signal
        while True:
            if self._signal is not None:
                self.stop_all(f"received signal {self._signal}")
                return 128 + self._signal
            for label, (task, proc) in self.procs.items():
                code = proc.poll()
                if code in PREEMPTED_STATUSES:  # a ps task stops in order too (after the chief, see ps.py)
                    preempted = preempted or (code, time.monotonic())
                    continue
                if code is not None and code != 0:
                    self._note(f"{label} failed: exited with status {_status(code)}"
                               f"{_signal_name(code)} (its output above is prefixed [{label}])")
                    self.stop_all(f"{label} exited with status {_status(code)}")
                    return _status(code)
                if code == 0 and task.job == "ps" and any(self.procs[r][1].poll() is None for r in ranks):
                    self.stop_all(f"{label} exited before the ranks finished")
                    return 1
            if preempted is not None and all(self.procs[label][1].poll() is not None for label in ranks):
                status = preempted[0]
                self._note(f"the ranks were preempted ({signal.Signals(status - 128).name}) and stopped in order; "
                           f"exiting with status {status}")
                if len(ranks) < len(self.procs):
                    self.stop_all("the ranks stopped")
                return status
            if preempted is not None and time.monotonic() - preempted[1] > PREEMPTED_WAIT:
                running = [label for label in ranks if self.procs[label][1].poll() is None]
                self.stop_all(f"{', '.join(running)} still running {PREEMPTED_WAIT:g} s after a rank was preempted")
                return preempted[0]
            if all(self.procs[label][1].poll() == 0 for label in ranks):
                ps_running = [t for t, p in self.procs.values() if t.job == "ps" and p.poll() is None]
                if ps_running and self.remote_workers:
                    # workers on other hosts still use these ps tasks: they stop when every worker has
                    # finished (distribute/ps.py); say so once and wait
                    if not self._waiting_note:
                        self._note(f"every rank of this host finished; {', '.join(t.label for t in ps_running)} "
                                   f"keep serving until the workers of the other hosts finish")
                        self._waiting_note = True
                    time.sleep(0.05)
                    continue
                if ps_running:  # parameter servers serve until stopped
                    self.stop_all("every rank finished")
                return 0
            time.sleep(0.05)


def _ascii_int(text: str) -> int:
    """argparse type: an int of ASCII digits with an optional '-' (int() would take '٣' and '1_0')."""
    body = text.strip()
    digits = body[1:] if body.startswith("-") else body
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer (ASCII digits)")
    return int(body)


def check_flags(args) -> None:
    """ValueError naming the flag when a launch flag is out of range (before anything starts)."""
    import math

    if not 1 <= args.base_port <= 65535:
        raise ValueError(f"--base-port {args.base_port}: allowed: a port 1..65535")
    if not (math.isfinite(args.grace) and 0 <= args.grace <= 3600):
        raise ValueError(f"--grace {args.grace}: allowed: seconds in 0..3600")
    if args.startup_timeout is not None and not 1 <= args.startup_timeout <= 86400:
        raise ValueError(f"--startup-timeout {args.startup_timeout}: allowed: seconds in 1..86400")
    if args.ps < 0:
        raise ValueError(f"--ps {args.ps}: allowed: an int >= 0")


def add_launch_command(subparsers) -> argparse.ArgumentParser:
    """Register `npurun launch` on the main CLI's subparsers."""
    parser = subparsers.add_parser(
        "launch", help="start N ranks of a training script on this machine (data-parallel or parameter-server)",
        description="Start N ranks of `python SCRIPT ARGS` with RANK_ID, RANK_SIZE and TF_CONFIG set (free "
                    "ports, named as 127.0.0.1, on one host; TensorFlow's servers listen on every interface "
                    "all the same: see docs/distributed.md, Security). Output lines are prefixed [rank i]. When a rank fails "
                    "every rank is stopped and the launcher exits with its status. A script that imports Ascend's "
                    "adapter (npu_bridge, hccl) runs as `npurun run SCRIPT ARGS` on each rank.",
        epilog="examples:\n"
               "  npurun launch -n 2 train.py --steps 100\n"
               "  npurun launch -n 2 --ps 1 train_ps.py           # parameter-server mode\n"
               "  npurun launch -n 4 --hosts 10.0.0.1:2,10.0.0.2:2 train.py   # prints host 2's command\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--nproc", type=_ascii_int, required=True, metavar="N", help="number of ranks")
    parser.add_argument("--ps", type=_ascii_int, default=0, metavar="K", help="also start K parameter-server tasks")
    parser.add_argument("--hosts", metavar="H:N,...", help="hosts and ranks per host, e.g. 10.0.0.1:2,10.0.0.2:2")
    parser.add_argument("--node-rank", type=_ascii_int, default=0, help="which host of --hosts this is (default 0)")
    parser.add_argument("--base-port", type=_ascii_int, default=DEFAULT_BASE_PORT,
                        help=f"first port on each host with --hosts (default {DEFAULT_BASE_PORT})")
    parser.add_argument("--startup-timeout", type=_ascii_int, metavar="SECONDS",
                        help="seconds the ranks wait for each other at start-up (sets HCCL_CONNECT_TIMEOUT)")
    parser.add_argument("--grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL (default 5)")
    parser.add_argument("script", help="the Python script each rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.set_defaults(handler=cmd_launch)
    return parser


def cmd_launch(args) -> int:
    try:
        check_flags(args)
        hosts = parse_hosts(args.hosts) if args.hosts is not None else None
        if hosts is not None and not 0 <= args.node_rank < len(hosts):
            raise ValueError(f"--node-rank {args.node_rank}: --hosts has {len(hosts)} hosts")
        tasks = plan_tasks(args.nproc, args.ps, hosts, args.base_port)
        if not os.path.isfile(args.script):  # before any rank starts (a FIFO would also hang the adapter scan)
            raise ValueError(f"no such script: {args.script} (allowed: a Python file)")
    except ValueError as err:
        print(f"npurun launch: {err}", file=sys.stderr)
        return 2
    if hosts is not None:
        commands = other_host_commands(args, hosts)
        if commands:
            print("npurun launch: run on the other hosts (same script and data paths there):", file=sys.stderr)
            for host, command in commands:
                print(f"  on {host}: {command}", file=sys.stderr)
        host = hosts[args.node_rank][0]
        first_rank = sum(slots for _, slots in hosts[:args.node_rank])
        mine = range(first_rank, first_rank + hosts[args.node_rank][1])
        tasks = [t for t in tasks if (t.job == "worker" and t.index in mine) or
                 (t.job == "ps" and args.node_rank == 0)]
        print(f"npurun launch: this is host {args.node_rank} ({host}): ranks {mine.start}..{mine.stop - 1}",
              file=sys.stderr)
    extra = {}
    if args.startup_timeout is not None:
        extra["HCCL_CONNECT_TIMEOUT"] = str(args.startup_timeout)
    command = [sys.executable, args.script, *args.args]
    if uses_adapter(args.script):  # an Ascend adapter script: each rank runs it as `npurun run` would
        command = [sys.executable, "-m", "npurun.compat", "run", args.script, *args.args]
    launch = Launch(tasks, command, grace=args.grace, extra_env=extra)
    if hosts is not None:
        launch.remote_workers = args.nproc - hosts[args.node_rank][1]
    if not launch.remote_workers:
        launch.extra_env["NPURUN_LAUNCH_STOPS_PS"] = "1"  # every worker is here: this launcher stops the ps tasks
    return launch.run()


def uses_adapter(script: str) -> bool:
    """Whether `script` imports Ascend's adapter (`npu_bridge` / `hccl` / `npu_device`), read as text (nothing is run)."""
    from .. import safe_files

    try:
        source = safe_files.read_at_most(script, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return re.search(r"^\s*(from|import)\s+(npu_bridge|hccl|npu_device)\b", source, re.MULTILINE) is not None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m npurun.distribute.launch ...`, for when the `npurun` command is not installed."""
    parser = argparse.ArgumentParser(prog="npurun")
    commands = parser.add_subparsers(dest="command")
    add_launch_command(commands)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "launch":
        argv = ["launch", *argv]
    return cmd_launch(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
