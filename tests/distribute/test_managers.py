"""Cluster managers' environments (Slurm, torchrun, Open MPI), unread ones refused, rank tables v1.0 / v1.2,
ASCII-only numbers, and bad cluster environments as clear errors naming the variable."""
import json
import random
import subprocess
import sys

import pytest

from npurun.config import managers
from npurun.config.cluster import read_cluster
from npurun.config.managers import ClusterEnvError, expand_nodelist, expand_tasks_per_node
from npurun.distribute.cluster import read_layout
from npurun.distribute.ranks import RankConfigError, read_ranks


def slurm(procid, ntasks=4, nodelist="node[01-02]", tasks_per_node="2(x2)", **more):
    env = {"SLURM_PROCID": str(procid), "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": str(ntasks),
           "SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_TASKS_PER_NODE": tasks_per_node}
    env.update(more)
    return env


@pytest.mark.parametrize("text, hosts", [
    ("node[01-03,7],gpu5", ["node01", "node02", "node03", "node7", "gpu5"]),
    ("a1", ["a1"]),
    ("n[8-11]", ["n8", "n9", "n10", "n11"]),
    ("n[008-010]", ["n008", "n009", "n010"]),
    ("r[1-2]-c[1-2]", ["r1-c1", "r1-c2", "r2-c1", "r2-c2"]),
    ("x,y[1,3],z.example.org", ["x", "y1", "y3", "z.example.org"]),
])
def test_nodelist_is_expanded_as_scontrol_does(text, hosts):
    assert expand_nodelist(text) == hosts


@pytest.mark.parametrize("text", ["n[1-", "n]1", "n[3-1]", "n[a-b]", "n[1-99999999]", "a,,b", "n[[1]]", "n[²]",
                                  "bad host"])
def test_bad_nodelists_name_the_variable(text):
    with pytest.raises(ClusterEnvError, match="SLURM_JOB_NODELIST"):
        expand_nodelist(text)


def test_tasks_per_node():
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    with pytest.raises(ClusterEnvError, match="SLURM_TASKS_PER_NODE"):
        expand_tasks_per_node("2(x)")


def test_slurm_block_and_cyclic():
    info = read_ranks(slurm(2, SLURM_LOCALID="0", SLURM_NODEID="1"))
    assert (info.rank_id, info.rank_size, info.local_rank_id, info.local_rank_size) == (2, 4, 0, 2)
    assert info.hosts == ("node01", "node01", "node02", "node02") and "Slurm" in info.source
    cyclic = read_ranks(slurm(2, SLURM_DISTRIBUTION="cyclic", SLURM_LOCALID="1", SLURM_NODEID="0"))
    assert cyclic.hosts == ("node01", "node02", "node01", "node02") and cyclic.local_rank_id == 1
    layout = read_layout(slurm(3, NPURUN_BASE_PORT="31000"))
    assert layout.cluster["worker"] == ("node01:31000", "node01:31001", "node02:31000", "node02:31001")
    # one node: the ranks talk over loopback
    one = read_layout(slurm(1, ntasks=2, nodelist="node01", tasks_per_node="2", NPURUN_BASE_PORT="31000"))
    assert one.cluster["worker"] == ("127.0.0.1:31000", "127.0.0.1:31001")
    # the chief is Slurm's rank 0
    assert read_cluster(slurm(0)).is_chief and not read_cluster(slurm(3)).is_chief


@pytest.mark.parametrize("env, message", [
    (slurm(4), "SLURM_PROCID=4 is out of range"),
    (slurm(1, SLURM_LOCALID="0"), "SLURM_LOCALID=0 but SLURM_PROCID=1 is local task 1"),
    (slurm(1, tasks_per_node="3,2"), "adds up to 5 tasks"),
    (slurm(1, tasks_per_node="4"), "gives 1 nodes"),
    (slurm(1, SLURM_DISTRIBUTION="plane=2"), "SLURM_DISTRIBUTION"),
    (slurm("²"), "SLURM_PROCID"),
    ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2"}, "SLURM_JOB_NODELIST"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, "not an srun job step"),
])
def test_bad_slurm_environments(env, message):
    with pytest.raises(RankConfigError, match=message):
        read_ranks(env)


def test_torchrun_and_open_mpi():
    info = read_ranks({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    assert (info.rank_id, info.rank_size, info.local_rank_size, info.hosts) == (1, 2, 2, ("", ""))
    mpi = read_ranks({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                      "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "NPURUN_HOSTS": "h0,h1"})
    assert (mpi.rank_id, mpi.local_rank_id, mpi.hosts) == (3, 1, ("h0", "h0", "h1", "h1"))
    # torchrun started by srun: torchrun's own variables win (it is the innermost launcher)
    both = read_ranks({**slurm(0, ntasks=1, nodelist="n1", tasks_per_node="1"), "RANK": "1", "WORLD_SIZE": "2"})
    assert (both.rank_id, both.rank_size) == (1, 2)
    # npurun's own variables win over a manager's (npurun launch inside an allocation)
    mine = read_ranks({**slurm(3), "RANK_ID": "0", "RANK_SIZE": "1"})
    assert (mine.rank_id, mine.rank_size) == (0, 1)


@pytest.mark.parametrize("env, message", [
    ({"RANK": "0"}, "RANK is set but WORLD_SIZE is not"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is out of range"),
    ({"RANK": "٣", "WORLD_SIZE": "4"}, "RANK: got '٣'"),
    ({"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}, "set NPURUN_HOSTS"),
    ({"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "NPURUN_HOSTS": "a"},
     "NPURUN_HOSTS: got 'a'"),
    ({"RANK": "1", "WORLD_SIZE": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}, "not a multiple"),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, "LOCAL_WORLD_SIZE is not set"),
    ({"OMPI_COMM_WORLD_RANK": "0"}, "OMPI_COMM_WORLD_SIZE is not"),
])
def test_bad_torchrun_and_mpi_environments(env, message):
    with pytest.raises(RankConfigError, match=message):
        read_ranks(env)


@pytest.mark.parametrize("env, name", [
    ({"CM_CHIEF_IP": "10.0.0.1", "CM_WORKER_SIZE": "8"}, "CM_"),
    ({"CM_WORKER_SIZE": "2"}, "CM_WORKER_SIZE"),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, "PMI_RANK"),
    ({"HOROVOD_RANK": "0", "HOROVOD_SIZE": "4"}, "HOROVOD_RANK"),
])
def test_unread_cluster_environments_are_refused_not_trained_alone(env, name):
    with pytest.raises(RankConfigError, match=f"{name}.*does not read.*rank 0 of 1"):
        read_ranks(env)


def test_unread_environment_of_one_process_or_beside_a_read_source_is_fine():
    assert read_ranks({"PMI_RANK": "0", "PMI_SIZE": "1"}).rank_size == 1
    assert read_ranks({"CM_WORKER_SIZE": "2", "RANK_ID": "1", "RANK_SIZE": "2"}).rank_id == 1


@pytest.mark.parametrize("value", ["²", "٣", "+1", "1_0", " ", "0x1", "-1", "1.0", "9" * 40])
def test_rank_id_takes_ascii_digits_only(value):
    env = {"RANK_ID": value, "RANK_SIZE": "4"}
    if value.strip():
        with pytest.raises(ValueError, match="RANK_ID"):
            read_ranks(env)
        with pytest.raises(ValueError, match="RANK_ID"):
            read_cluster(env)
    else:
        assert read_ranks({"RANK_ID": value}).rank_id == 0


def rank_table(tmp_path, version, servers):
    table = {"version": version, "server_count": str(len(servers)), "status": "completed", "server_list": servers}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    return str(path)


def test_rank_table_versions(tmp_path):
    devices = lambda first: [{"device_id": str(d), "device_ip": "192.168.0.1", "rank_id": str(first + d)}
                             for d in range(2)]
    v12 = rank_table(tmp_path, "1.2", [{"server_id": "node_0", "host_ip": "10.213.0.1", "device": devices(0)},
                                       {"server_id": "node_1", "host_ip": "10.213.0.2", "device": devices(2)}])
    info = read_ranks({"RANK_TABLE_FILE": v12, "RANK_ID": "3"})
    assert info.server_ids == ("node_0", "node_0", "node_1", "node_1")
    assert info.hosts == ("10.213.0.1", "10.213.0.1", "10.213.0.2", "10.213.0.2") and info.local_rank_id == 1
    layout = read_layout({"RANK_TABLE_FILE": v12, "RANK_ID": "2", "NPURUN_BASE_PORT": "31000"})
    assert layout.cluster["worker"][2:] == ("10.213.0.2:31000", "10.213.0.2:31001")
    # the rank from Slurm when RANK_ID is not set
    assert read_ranks({"RANK_TABLE_FILE": v12, **slurm(1)}).rank_id == 1
    v10 = rank_table(tmp_path, "1.0", [{"server_id": "10.213.0.1", "device": devices(0)}])
    assert read_ranks({"RANK_TABLE_FILE": v10, "RANK_ID": "1"}).hosts == ("10.213.0.1",) * 2


@pytest.mark.parametrize("version, server, message", [
    ("1.1", {"server_id": "10.0.0.1"}, "version '1.1' is not supported; allowed: 1.0, 1.2"),
    ("2.0", {"server_id": "10.0.0.1"}, "version '2.0' is not supported"),
    ("1.2", {"server_id": "node_0"}, "version 1.2 server 'node_0' needs 'host_ip'"),
    ("1.0", {"server_id": "node_0"}, "version 1.0 takes server_id as the server's address"),
])
def test_rank_table_version_errors(tmp_path, version, server, message):
    server = dict(server, device=[{"device_id": "0", "rank_id": "0"}])
    with pytest.raises(RankConfigError, match=message.replace("(", r"\(")):
        read_ranks({"RANK_TABLE_FILE": rank_table(tmp_path, version, [server]), "RANK_ID": "0"})


BAD_TF_CONFIGS = ['{"task": "x"}', '[1]', '"s"', '{"cluster": [1]}', '{"cluster": {"worker": "a:1"}}',
                  '{"cluster": {"worker": [1]}}', '{"cluster": {"worker": ["a"]}}', '{"cluster": {"worker": ["a:0"]}}',
                  '{"cluster": {"worker": ["a:1"]}, "task": {"type": 3}}',
                  '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}}',
                  '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}}',
                  '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 5}}',
                  '{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}',
                  '[' * 100000, '{"cluster": {"worker": ["a:99999"]}}']
BAD_TABLES = ['[]', '{"server_list": [1]}', '{"server_list": [{"server_id": "a", "device": 5}]}',
              '{"server_list": [{"server_id": "a", "device": [7]}]}',
              '{"server_list": [{"server_id": "a", "device": [{"rank_id": "²"}]}]}',
              '{"server_list": {"a": 1}}', '[' * 100000, '\xff\xfe']


def test_bad_cluster_environments_are_clear_errors_naming_the_variable(tmp_path):
    """A bounded fuzz: every bad environment is a RankConfigError naming the variable; nothing else escapes."""
    cases = [({"TF_CONFIG": text}, "TF_CONFIG") for text in BAD_TF_CONFIGS]
    for i, text in enumerate(BAD_TABLES):
        path = tmp_path / f"t{i}.json"
        path.write_bytes(text.encode("latin-1"))
        cases.append(({"RANK_TABLE_FILE": str(path), "RANK_ID": "0"}, "RANK_TABLE_FILE"))
    cases.append(({"RANK_TABLE_FILE": str(tmp_path / "missing")}, "RANK_TABLE_FILE"))
    cases.append(({"RANK_TABLE_FILE": "a\0b"}, "RANK_TABLE_FILE"))
    rng = random.Random(26)
    junk = ["", "0", "1", "-1", "²", "٣", "abc", "1e3", "9" * 30, " 2 ", "node[1-2]", "[", "2(x2)"]
    names = ["RANK_ID", "RANK_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
             "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_NODELIST",
             "SLURM_TASKS_PER_NODE", "NPURUN_BASE_PORT", "NPURUN_HOSTS"]
    for _ in range(150):
        env = {name: rng.choice(junk) for name in rng.sample(names, 3)}
        if "SLURM_PROCID" in env:
            env["SLURM_STEP_ID"] = "0"
        cases.append((env, None))
    for env, name in cases:
        # read_cluster's TF_CONFIG parse belongs to the config validation work (issue 27); its rank part is here
        readers = (read_ranks, read_layout) if "TF_CONFIG" in env else (read_ranks, read_layout, read_cluster)
        for reader in readers:
            try:
                reader(env)
            except ValueError as err:  # RankConfigError, ClusterEnvError are ValueErrors
                text = str(err)
                assert len(text) < 1200, text
                named = [name] if name else [n for n in env if n in text or n.split("_")[0] in text]
                assert named and (name is None or name in text), (env, text)
            except Exception as err:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{reader.__name__}({env!r}) raised {type(err).__name__}: {err}")


def test_launch_flags_out_of_range_are_one_clear_error(tmp_path):
    script = tmp_path / "never.py"
    script.write_text("raise SystemExit('must not run')\n")
    for flags, message in ((["--base-port", "70000"], "--base-port 70000: allowed: a port 1..65535"),
                           (["--grace", "nan"], "--grace nan: allowed"),
                           (["--startup-timeout", "-5"], "--startup-timeout -5: allowed"),
                           (["--hosts", "a:2,b:1", "--base-port", "65535"], "past 65535"),
                           (["--ps", "٣"], "not an integer")):
        proc = subprocess.run([sys.executable, "-m", "npurun.distribute.launch", "-n", "3", *flags, str(script)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (flags, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr and "must not run" not in proc.stderr
