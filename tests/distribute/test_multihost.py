"""Several hosts, simulated by network namespaces the tests create and remove (see netns.py): the
addresses 10.213.0.x exist only inside them. Each host runs `npurun launch --hosts ... --node-rank i`
as a user would on each machine, from a fresh interpreter; a third namespace plays a machine outside
the cluster. Skipped, with the reason printed, only where namespaces cannot be made."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from . import netns

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
PYTHON = sys.executable
REASON = netns.unavailable()
CHIEF_DNS, WORKER_DNS = "train-chief-0.default.svc", "train-worker-0.default.svc"


@pytest.fixture(scope="module")
def hosts():
    if REASON:
        print(f"multi-host tests skipped: {REASON}")
        pytest.skip(REASON)
    with netns.Hosts(3) as made:  # hosts 0 and 1 form the cluster; host 2 is outside it
        # what a cluster DNS gives a Kubeflow TFJob's pods: one name per replica
        made.add_names({CHIEF_DNS: made.addresses[0], WORKER_DNS: made.addresses[1]})
        yield made
    assert not [n for n in made.names if n in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                              text=True).stdout]
    assert not [n for n in made.names if os.path.exists(os.path.join("/etc/netns", n))]


def env(**more):
    base = dict(os.environ, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    for name in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE", "NPURUN_EXPOSED_SERVERS_OK"):
        base.pop(name, None)
    base.update(more)
    return base


def connects(hosts, host, address, port):
    probe = (f"import socket\ntry:\n socket.create_connection(({address!r}, {port}), timeout=3).close()\n"
             f" print('connected')\nexcept OSError as e:\n print('refused', e)")
    return hosts.run(host, [PYTHON, "-c", probe], timeout=30).stdout.strip()


def test_a_rank_server_is_refused_from_outside_or_the_warning_says_it_is_not(hosts):
    """A one-host job names 127.0.0.1; from another machine its rank's port must refuse connections,
    or rank 0 must have printed the warning that it listens beyond loopback (never both, never neither)."""
    ports = [31001, 31002]
    tf_config = json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                            "task": {"type": "worker", "index": 0}})
    proc = hosts.popen(0, [PYTHON, str(HERE / "scripts" / "listen.py")], env=env(TF_CONFIG=tf_config),
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening"), proc.stderr.read()[-3000:] if proc.poll() is not None else line
        outside = connects(hosts, 2, hosts.addresses[0], ports[0])
        inside = connects(hosts, 0, "127.0.0.1", ports[0])
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    stderr = proc.stderr.read()
    assert inside == "connected"
    warned = "listen beyond loopback" in stderr and f"port {ports[0]}" in stderr
    assert outside.startswith("connected") == warned, (outside, stderr[-2000:])
    assert stderr.count("listen beyond loopback") <= 1


def launch(hosts, host, out, node_rank, *args, script="estimator_train.py", script_args=()):
    spec = ",".join(f"{a}:1" for a in hosts.addresses[:2])
    argv = [PYTHON, "-m", "npurun.distribute.launch", "-n", "2", "--hosts", spec, "--node-rank", str(node_rank),
            "--base-port", "31100", "--startup-timeout", "20", "--grace", "3", *args,
            str(HERE / "scripts" / script), *script_args]
    return hosts.popen(host, argv, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs, timeout):
    results = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        results.append((proc.returncode, stdout, stderr))
    return results


def test_two_hosts_train_data_parallel_to_identical_weights(hosts, tmp_path):
    procs = [launch(hosts, h, tmp_path, h, script_args=(str(tmp_path), "1", "6", "16")) for h in (0, 1)]
    results = finish(procs, 120)
    for code, stdout, stderr in results:
        assert code == 0, stderr[-4000:]
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert reports[0]["initial"] != reports[1]["initial"]  # each rank started from its own initialisation
    assert reports[0]["final_hex"] == reports[1]["final_hex"]
    assert [r["is_chief"] for r in reports] == [True, False]
    # the addresses were the namespaces' own: each host's launcher ran its rank there
    assert "this is host 1 (10.213.0.2): ranks 1..1" in results[1][2]
    # each rank's servers listen on its host's address only (the launcher's bind narrowing), so no warning
    for rank in (0, 1):
        own = {a.rpartition(":")[0] for a in reports[rank]["listening"]}
        assert own and own <= {hosts.addresses[rank], "::ffff:" + hosts.addresses[rank]}, reports[rank]["listening"]
    assert not any("listen beyond loopback" in stderr for _, _, stderr in results)


def test_a_duplicated_rank_and_a_differing_rank_count_are_refused_within_seconds(hosts, tmp_path):
    """Both hosts started with --node-rank 0 (two processes claim rank 0), and, at the same time on other
    ports, host 1 started for 3 ranks while host 0 was started for 2. Each is a StartupIdentityError naming
    both processes, long before the start-up timeout (120 s) that would otherwise end the wait."""
    def argv(n, spec, node, port):
        return [PYTHON, "-m", "npurun.distribute.launch", "-n", n, "--hosts", spec, "--node-rank", node,
                "--base-port", port, "--startup-timeout", "120", "--grace", "3",
                str(HERE / "scripts" / "session_start.py")]

    a, b = hosts.addresses[:2]
    plans = [(0, argv("2", f"{a}:1,{b}:1", "0", "31100")), (1, argv("2", f"{a}:1,{b}:1", "0", "31100")),
             (0, argv("2", f"{a}:1,{b}:1", "0", "31200")), (1, argv("3", f"{a}:1,{b}:2", "1", "31200"))]
    start = time.monotonic()
    procs = [hosts.popen(h, command, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for h, command in plans]
    results = finish(procs, 150)
    elapsed = time.monotonic() - start
    for code, _, stderr in results[:2]:
        assert code != 0 and "two processes claim rank 0" in stderr, stderr[-3000:]
    assert "says it is rank 0" in results[0][2] and f"{b}:31100" in results[0][2]
    assert all(code != 0 for code, _, _ in results[2:]), [r[2][-2000:] for r in results[2:]]
    assert "describes a cluster with more ranks than this process's 2" in results[2][2], results[2][2][-3000:]
    assert "StartupTimeoutError" not in results[0][2] + results[1][2] + results[2][2]
    assert elapsed < 110, elapsed  # TensorFlow's import and start take most of it, however loaded the machine


def test_a_cut_link_stops_both_hosts_within_the_peer_timeout(hosts, tmp_path):
    """Training runs until the link between the hosts is cut; each side stops within NPURUN_PEER_TIMEOUT (6 s)
    plus a probe interval, naming the peer, long before hccl_timeout (600 s here)."""
    spec = ",".join(f"{a}:1" for a in hosts.addresses[:2])
    argv = lambda node: [PYTHON, "-m", "npurun.distribute.launch", "-n", "2", "--hosts", spec, "--node-rank", node,
                         "--base-port", "31300", "--startup-timeout", "30", "--grace", "2",
                         str(HERE / "scripts" / "session_loop.py")]
    procs = [hosts.popen(h, argv(str(h)), env=env(NPURUN_PEER_TIMEOUT="6", HCCL_EXEC_TIMEOUT="600"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in (0, 1)]
    try:
        line = procs[0].stdout.readline()  # the first step ran on both ranks
        assert line.startswith("[rank 0] step"), procs[0].stderr.read()[-3000:] if procs[0].poll() is not None else line
        hosts.set_link(1, up=False)
        cut = time.monotonic()
        results = finish(procs, 60)
        elapsed = time.monotonic() - cut
    finally:
        hosts.set_link(1, up=True)
    for (code, _, stderr), peer in zip(results, ("rank 1", "rank 0")):
        assert code == 1, stderr[-3000:]
        assert f"{peer} (" in stderr and "has not answered" in stderr and "NPURUN_PEER_TIMEOUT=6" in stderr
    assert elapsed < 20, elapsed


def test_ps_across_hosts_serves_until_every_worker_of_the_job_finished(hosts, tmp_path):
    """Host 0 runs ps 0 and worker rank 0 (100 steps), host 1 runs worker rank 1 (400 steps, so it trains on
    alone after host 0's rank finished): the ps keeps serving until rank 1 is done, and both hosts exit 0."""
    spec = ",".join(f"{a}:1" for a in hosts.addresses[:2])
    argv = lambda node, steps: [PYTHON, "-m", "npurun.distribute.launch", "-n", "2", "--ps", "1", "--hosts", spec,
                                "--node-rank", node, "--base-port", "31400", "--startup-timeout", "30", "--grace", "3",
                                str(HERE / "scripts" / "estimator_ps.py"), str(tmp_path), steps, "8"]
    procs = [hosts.popen(h, argv(str(h), steps), env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for h, steps in ((0, "100"), (1, "400"))]
    results = finish(procs, 120)
    for code, _, stderr in results:
        assert code == 0, stderr[-4000:]
    assert "every rank of this host finished; ps 0 keep serving until the workers of the other hosts finish" in results[0][2]
    assert "CollectiveTimeoutError" not in results[1][2]
    late = json.loads((tmp_path / "worker1.json").read_text())
    assert late["global_step"] >= 400 and late["var_devices"] == ["/job:ps/task:0"] * len(late["var_devices"])


def private_model_dir(path, argv):
    """`argv` in a mount namespace of its own where a fresh tmpfs covers `path` (a local disk per host)."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", 'mount -t tmpfs npurun-test "$0" && exec "$@"',
            str(path), *argv]


def test_a_killed_remote_rank_and_a_model_dir_not_shared_between_hosts_stop_the_job_within_the_timeouts(
        hosts, tmp_path):
    """Two jobs at once, on other ports (their waits overlap, as in the duplicated-rank test):
    1. kill -9 of rank 1's process on host 1 while both train: rank 0 (the leader, which TensorFlow alone would
       leave waiting for hccl_timeout, 600 s here) stops within NPURUN_PEER_TIMEOUT (6 s) plus a probe interval,
       naming rank 1 and its address; host 1's launcher names the killed rank.
    2. a first run (no checkpoint) given the same model_dir path on both hosts, where each host sees its own
       directory (a private tmpfs per host, as a local disk): rank 1 stops at the start-up naming its rank, host,
       the path and that a shared model_dir is required; rank 0 stops too, naming rank 1. (One model_dir path
       per rank is allowed: test_two_hosts_train_data_parallel_to_identical_weights trains that way.)"""
    spec = ",".join(f"{a}:1" for a in hosts.addresses[:2])
    shared = tmp_path / "shared"
    shared.mkdir()

    def argv(node, port, timeout, *script):
        return [PYTHON, "-m", "npurun.distribute.launch", "-n", "2", "--hosts", spec, "--node-rank", node,
                "--base-port", port, "--startup-timeout", timeout, "--grace", "2", *map(str, script)]

    killing = [hosts.popen(h, argv(str(h), "31500", "30", HERE / "scripts" / "session_loop.py"),
                           env=env(NPURUN_PEER_TIMEOUT="6", HCCL_EXEC_TIMEOUT="600"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in (0, 1)]
    unshared = [hosts.popen(h, private_model_dir(shared, argv(str(h), "31600", "15", HERE / "scripts" /
                                                              "estimator_train.py", tmp_path, 1, 4, 8, shared)),
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in (0, 1)]
    line = killing[1].stdout.readline()  # "[rank 1] step 0 pid P": the first step ran on both ranks
    assert line.startswith("[rank 1] step 0 pid "), \
        killing[1].stderr.read()[-3000:] if killing[1].poll() is not None else line
    os.kill(int(line.split()[-1]), signal.SIGKILL)
    killed = time.monotonic()
    (code0, _, stderr0), (code1, _, stderr1) = finish(killing, 60)
    elapsed = time.monotonic() - killed
    assert code0 == 1, stderr0[-3000:]
    assert f"rank 1 ({hosts.addresses[1]}:31500) is gone: its host refuses connections" in stderr0, stderr0[-3000:]
    assert "NPURUN_PEER_TIMEOUT=6" in stderr0
    assert code1 != 0 and "rank 1 failed" in stderr1, stderr1[-3000:]
    assert elapsed < 25, elapsed

    (code0, _, stderr0), (code1, _, stderr1) = finish(unshared, 150)
    assert code1 != 0 and code0 != 0, (stderr0[-2000:], stderr1[-2000:])
    assert f"SharedModelDirError: rank 1 of 2 (host {socket.gethostname()}, {hosts.addresses[1]}:31600): model_dir " \
           f"{str(shared)!r} is the chief's model_dir path, but this host does not see the chief's directory" in stderr1, \
        stderr1[-3000:]
    assert "A shared model_dir is required" in stderr1
    assert f"SharedModelDirError: rank 0 of 2 (host {socket.gethostname()}, {hosts.addresses[0]}:31600): rank 1 is " \
           f"given the chief's model_dir path {str(shared)!r}" in stderr0, stderr0[-3000:]
    assert not list(tmp_path.glob("rank*.json")) and not os.listdir(shared)  # nobody trained; the real dir untouched


def test_a_kubeflow_tf_config_with_dns_names_trains_and_sigterm_stops_both_pods_at_one_step(hosts, tmp_path):
    """The Kubernetes recipe of docs/distributed.md: each "pod" (a host namespace) runs `python train.py` with the
    TF_CONFIG a Kubeflow TFJob sets (chief + worker, DNS names resolved by the namespace's /etc/hosts), on a
    shared model_dir (as a PVC: the start-up model_dir check passes). Kubernetes preempts with SIGTERM to the
    chief's pod: both ranks stop after the same step, the chief saves that step once, both exit 143."""
    script = HERE / "workers" / "estimator_preempt.py"  # saves only at the stop (save_checkpoints_steps large)
    cluster = {"chief": [f"{CHIEF_DNS}:2222"], "worker": [f"{WORKER_DNS}:2222"]}
    procs = []
    for host, task in ((0, {"type": "chief", "index": 0}), (1, {"type": "worker", "index": 0})):
        tf_config = json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})
        procs.append(hosts.popen(host, [PYTHON, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env(TF_CONFIG=tf_config, OUT=str(tmp_path), HCCL_CONNECT_TIMEOUT="30",
                                         NPURUN_PEER_TIMEOUT="10")))
    line = procs[0].stdout.readline()
    assert line.startswith("step "), procs[0].stderr.read()[-3000:] if procs[0].poll() is not None else line
    procs[0].send_signal(signal.SIGTERM)  # `ip netns exec` execs the command: this is the chief's process
    signalled = time.monotonic()
    results = finish(procs, 60)
    elapsed = time.monotonic() - signalled
    stops = []
    for code, _, stderr in results:
        assert code == 143, stderr[-3000:]
        stops += re.findall(r"^SIGTERM( \(received by another rank\))?: training stopped at global step (\d+); (.*)$",
                            stderr, re.M)
    assert len(stops) == 2 and stops[0][1] == stops[1][1], stops
    step = int(stops[0][1])
    assert stops[0][0] == "" and stops[1][0] == " (received by another rank)"
    assert stops[0][2].startswith(f"saved {tmp_path / 'model' / f'model.ckpt-{step}'} with the input position")
    assert "(the chief saves the checkpoint)" in stops[1][2]
    saved = sorted((p.name for p in (tmp_path / "model").glob("model.ckpt-*.index")), key=lambda n: (len(n), n))
    # step 0's (written when training starts, as tf.estimator does) and one at the stop, by the chief only
    assert step > 0 and saved == ["model.ckpt-0.index", f"model.ckpt-{step}.index"], saved
    assert "Saving checkpoints" not in results[1][2]
    assert not list((tmp_path / "model" / ".npurun_shared").glob("start.*"))  # the chief's marker removed at exit
    assert elapsed < 30, elapsed
