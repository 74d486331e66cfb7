"""`npurun launch`: environment per rank, prefixed output, failure propagation, ps tasks, hosts.

The launched script (scripts/report.py) does not import TensorFlow, so these tests take seconds.
The launcher is run as `python -m npurun.distribute.launch` (what `npurun launch` calls).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npurun.distribute import launch

SCRIPT = str(Path(__file__).parent / "scripts" / "report.py")


def run_launch(*argv, timeout=60):
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG")}
    proc = subprocess.run([sys.executable, "-m", "npurun.distribute.launch", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)
    return proc, time.monotonic() - started


def lines_of(text, prefix):
    return [line[len(prefix):] for line in text.splitlines() if line.startswith(prefix)]


def test_each_rank_gets_its_environment_and_prefixed_output():
    proc, _ = run_launch("-n", "3", "--startup-timeout", "9", SCRIPT, "ok")
    assert proc.returncode == 0, proc.stderr
    ports, feed_ports = set(), set()
    for rank in range(3):
        out = lines_of(proc.stdout, f"[rank {rank}] ")
        assert out[0] == f"RANK_ID={rank} RANK_SIZE=3 HCCL_CONNECT_TIMEOUT=9"
        config = json.loads(out[1][len("TF_CONFIG="):])
        assert config["task"] == {"type": "worker", "index": rank}
        workers = config["cluster"]["worker"]
        assert len(workers) == 3 and all(w.startswith("127.0.0.1:") for w in workers)
        ports.add(tuple(workers))
        assert lines_of(proc.stderr, f"[rank {rank}] ") == ["to stderr"]
        feed_ports.add(out[2])
    assert len(ports) == 1 and len(set(next(iter(ports)))) == 3  # one cluster, three distinct ports
    # one input-feeding port for the host (local_rank_id), not one of the servers' ports
    assert len(feed_ports) == 1
    feed_port = next(iter(feed_ports))[len("NPURUN_FEED_PORT="):]
    assert feed_port.isdigit() and f"127.0.0.1:{feed_port}" not in next(iter(ports))
    # every output line is prefixed
    assert all(re.match(r"\[rank \d\] ", line) for line in proc.stdout.splitlines())


def test_a_failing_rank_stops_the_others_and_fails_the_launch():
    proc, elapsed = run_launch("-n", "3", "--grace", "2", SCRIPT, "fail1", "1")
    assert proc.returncode == 3
    assert "[rank 1] rank 1 fails now" in proc.stdout
    assert "npurun launch: rank 1 exited with status 3; stopping rank 0, rank 2" in proc.stderr
    assert elapsed < 30  # the others sleep 60 s: they were stopped
    for rank in (0, 2):
        pid = int(lines_of(proc.stdout, f"[rank {rank}] ")[3][len("pid="):])
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_launch_names_the_rank_that_failed_even_when_nothing_is_left_to_stop():
    proc, _ = run_launch("-n", "2", SCRIPT, "exit3")
    assert proc.returncode == 3
    assert re.search(r"npurun launch: rank [01] failed: exited with status 3", proc.stderr), proc.stderr


def test_parameter_servers_are_stopped_when_the_ranks_finish():
    proc, elapsed = run_launch("-n", "2", "--ps", "1", SCRIPT, "ps_serves")
    assert proc.returncode == 0, proc.stderr
    ps_lines = lines_of(proc.stdout, "[ps 0] ")
    assert ps_lines[0] == "RANK_ID= RANK_SIZE=2 HCCL_CONNECT_TIMEOUT="
    config = json.loads(ps_lines[1][len("TF_CONFIG="):])
    assert config["task"] == {"type": "ps", "index": 0} and len(config["cluster"]["ps"]) == 1
    assert "every rank finished; stopping ps 0" in proc.stderr
    assert elapsed < 30


def test_signal_to_the_launcher_stops_every_rank():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG")}
    proc = subprocess.Popen([sys.executable, "-m", "npurun.distribute.launch", "-n", "2", "--grace", "2", SCRIPT,
                             "sleep"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    pids = []
    while len(pids) < 2:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        if "] pid=" in line:
            pids.append(int(line.split("pid=")[1]))
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "received signal 15; stopping rank 0, rank 1" in err
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_ranks_preempted_in_order_are_waited_for_and_give_the_launchers_status():
    """A rank's exit 143 (NPUEstimator's orderly preemption) is not a failure: the launcher waits for
    rank 0 (which exits 143 three seconds later, after its checkpoint) instead of stopping it, then
    exits 143 with one line. Every task is marked NPURUN_LAUNCHED=1."""
    proc, elapsed = run_launch("-n", "2", SCRIPT, "preempted", "3")
    assert proc.returncode == 143, proc.stderr
    assert lines_of(proc.stdout, "[rank 0] ")[-1] == "NPURUN_LAUNCHED=1"
    assert [line for line in proc.stderr.splitlines() if line.startswith("npurun launch:")] == [
        "npurun launch: the ranks were preempted (SIGTERM) and stopped in order; exiting with status 143"]
    assert elapsed >= 3


def test_a_rank_killed_by_a_signal_is_a_failure_not_a_preemption():
    proc, elapsed = run_launch("-n", "2", "--grace", "2", SCRIPT, "killed1")
    assert proc.returncode == 143
    assert "rank 1 failed: exited with status 143, killed by SIGTERM" in proc.stderr
    assert "stopping rank 0" in proc.stderr and elapsed < 30  # rank 0 (sleeping 60 s) was stopped


def test_hosts_prints_the_other_hosts_commands_and_runs_this_hosts_ranks():
    proc, _ = run_launch("-n", "3", "--hosts", "127.0.0.1:2,10.9.9.9:1", "--base-port", "31000", SCRIPT, "ok",
                         "--flag")
    assert proc.returncode == 0, proc.stderr
    assert ("on 10.9.9.9: npurun launch -n 3 --hosts 127.0.0.1:2,10.9.9.9:1 --node-rank 1 --base-port 31000 "
            f"{SCRIPT} ok --flag") in proc.stderr
    assert "this is host 0 (127.0.0.1): ranks 0..1" in proc.stderr
    config = json.loads(lines_of(proc.stdout, "[rank 1] ")[1][len("TF_CONFIG="):])
    assert config["cluster"]["worker"] == ["127.0.0.1:31000", "127.0.0.1:31001", "10.9.9.9:31000"]
    # the feeding service's port follows the host's ranks
    assert lines_of(proc.stdout, "[rank 1] ")[2] == "NPURUN_FEED_PORT=31002"
    assert "[rank 2]" not in proc.stdout


@pytest.mark.parametrize("argv, message", [
    (["-n", "0", SCRIPT], "-n: got 0"),
    (["-n", "2", "--hosts", "a:1,b:2", SCRIPT], "--hosts gives 3 ranks but -n is 2"),
    (["-n", "2", "--hosts", "a:x", SCRIPT], "'a:x' is not HOST:RANKS"),
    (["-n", "2", "--hosts", "a:1,b:1", "--node-rank", "2", SCRIPT], "--node-rank 2: --hosts has 2 hosts"),
])
def test_bad_arguments_exit_2(argv, message):
    proc, _ = run_launch(*argv)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_add_launch_command_registers_on_a_cli():
    import argparse

    parser = argparse.ArgumentParser(prog="npurun")
    launch.add_launch_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["launch", "-n", "2", "train.py", "--lr", "0.1"])
    assert (args.nproc, args.script, args.args, args.handler) == (2, "train.py", ["--lr", "0.1"], launch.cmd_launch)
