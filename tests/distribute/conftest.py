"""Multi-process helpers: N ranks of a worker script on 127.0.0.1 with free ports.

Each rank gets RANK_ID, RANK_SIZE, TF_CONFIG (a worker job, plus a ps job when asked) and OUT, a
directory where the script writes its results. The ranks are forked from one process that has
imported TensorFlow (see zygote.py), so a 3-rank test pays for one import. Ranks are awaited
independently (no launcher), so a test can observe what the surviving ranks do when one fails.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
WORKERS = HERE / "workers"
PYTHON = sys.executable


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class RankResult:
    rank: int
    returncode: int
    stdout: str
    stderr: str

    def results(self, out: Path):
        return json.loads((out / f"rank{self.rank}.json").read_text())


def free_port_range(count, attempts=50):
    """A port p such that p .. p + count - 1 are all free now (for NPURUN_BASE_PORT)."""
    import random

    for _ in range(attempts):
        base = random.randrange(20000, 60000 - count)
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports found")


def rank_envs(n, out, ps=0, extra=None, tf_config=True):
    """Environment additions per task: workers (rank order) then ps tasks.

    tf_config=False: no TF_CONFIG (ranks from RANK_ID / RANK_SIZE only, ports from NPURUN_BASE_PORT).
    """
    ports = free_ports(n + ps)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports[:n]]}
    if ps:
        cluster["ps"] = [f"127.0.0.1:{p}" for p in ports[n:]]
    base = None if tf_config else free_port_range(n)
    envs = []
    for job, count in (("worker", n), ("ps", ps)):
        for index in range(count):
            env = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": job, "index": index}}),
                   "OUT": str(out), "RANK_ID": str(index) if job == "worker" else "",
                   "RANK_SIZE": str(n) if job == "worker" else "", "RANK_TABLE_FILE": ""}
            if base is not None:
                env.update(TF_CONFIG="", NPURUN_BASE_PORT=str(base))
            env.update((extra or {}).get("all", {}))
            env.update((extra or {}).get(index if job == "worker" else f"ps{index}", {}))
            envs.append(env)
    return envs


class Ranks:
    """Running ranks (forked by zygote.py); `wait` gives one RankResult per started task."""

    def __init__(self, script, n, out, args=(), ps=0, extra=None, skip=(), tf_config=True):
        self.dir = out / "ranks"
        self.dir.mkdir(exist_ok=True)
        tasks = [{"name": f"rank{i}", "env": env, "argv": [str(WORKERS / script), *map(str, args)]}
                 for i, env in enumerate(rank_envs(n, out, ps, extra, tf_config)) if i not in skip]
        spec = self.dir / "spec.json"
        spec.write_text(json.dumps({"ranks": tasks, "dir": str(self.dir)}))
        self.names = [t["name"] for t in tasks]
        self.started = time.monotonic()
        env = dict(os.environ, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
        for name in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE"):
            env.pop(name, None)
        self.zygote = subprocess.Popen([PYTHON, str(HERE / "zygote.py"), str(spec)], env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def pids(self, timeout=60):
        deadline = time.monotonic() + timeout
        path = self.dir / "pids.json"
        while not path.exists():
            if self.zygote.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the ranks did not start: {self.zygote.stderr.read()[-3000:]}")
            time.sleep(0.1)
        time.sleep(0.05)
        return json.loads(path.read_text())

    def wait_for_line(self, rank, prefix, count=1, timeout=90):
        """Block until rank's stdout has `count` lines starting with `prefix`."""
        deadline = time.monotonic() + timeout
        path = self.dir / f"rank{rank}.out"
        while time.monotonic() < deadline:
            if path.exists() and sum(line.startswith(prefix) for line in path.read_text().splitlines()) >= count:
                return
            if self.zygote.poll() is not None:
                break
            time.sleep(0.1)
        pytest.fail(f"rank {rank} never printed {count} x {prefix!r}: {self.read(rank, 'err')[-3000:]}")

    def kill(self, rank):
        os.kill(self.pids()[f"rank{rank}"], signal.SIGKILL)

    def read(self, rank, suffix="out"):
        path = self.dir / f"rank{rank}.{suffix}"
        return path.read_text() if path.exists() else ""

    def wait(self, timeout=90):
        try:
            self.zygote.communicate(timeout=max(1.0, timeout - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            for pid in self.pids().values():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.zygote.kill()
            self.zygote.communicate()
            logs = "\n".join(f"--- {n}\n{self.read(int(n[4:]))[-2000:]}\n{self.read(int(n[4:]), 'err')[-2000:]}"
                             for n in self.names)
            pytest.fail(f"the ranks did not finish within {timeout} s:\n{logs}")
        codes = json.loads((self.dir / "codes.json").read_text())
        return [RankResult(int(name[4:]), codes[name], self.read(int(name[4:])), self.read(int(name[4:]), "err"))
                for name in self.names]


def run_ranks(script, n, out, args=(), timeout=90, ps=0, extra=None, skip=(), tf_config=True):
    return Ranks(script, n, out, args, ps, extra, skip, tf_config).wait(timeout)


def assert_ok(results):
    for r in results:
        assert r.returncode == 0, f"rank {r.rank} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"


@pytest.fixture
def out(tmp_path):
    path = tmp_path / "out"
    path.mkdir()
    return path
