"""Rank discovery: every source alone, sources together, and each inconsistency as a clear error."""
import json

import pytest

from npurun.distribute import ranks
from npurun.distribute.ranks import RankConfigError, read_ranks

RANK_VARS = ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in RANK_VARS:
        monkeypatch.delenv(name, raising=False)
    yield
    ranks._GROUPS.clear()


def tf_config(workers, index, chief=None, task_type="worker"):
    cluster = {"worker": workers}
    if chief:
        cluster["chief"] = chief
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


def rank_table(tmp_path, servers):
    table = {"server_count": str(len(servers)), "status": "completed", "version": "1.0", "server_list": [
        {"server_id": server, "device": [{"device_id": str(d), "device_ip": f"192.168.1.{r}", "rank_id": str(r)}
                                         for d, r in enumerate(rank_ids)]}
        for server, rank_ids in servers]}
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table))
    return str(path)


def test_no_source_is_rank_0_of_1():
    info = read_ranks()
    assert (info.rank_id, info.rank_size, info.local_rank_id, info.local_rank_size) == (0, 1, 0, 1)
    assert ranks.get_rank_id() == 0 and ranks.get_rank_size() == 1


def test_rank_id_and_size(monkeypatch):
    monkeypatch.setenv("RANK_ID", "2")
    monkeypatch.setenv("RANK_SIZE", "4")
    assert ranks.get_rank_id() == 2
    assert ranks.get_rank_size() == 4
    # no host information: every rank is on this host
    assert ranks.get_local_rank_id() == 2
    assert ranks.get_local_rank_size() == 4


def test_tf_config_numbers_chief_first(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", tf_config(["h1:1", "h2:1", "h2:2"], 2, chief=["h1:9"]))
    info = read_ranks()
    assert info.rank_id == 3 and info.rank_size == 4
    assert info.addresses == ("h1:9", "h1:1", "h2:1", "h2:2")
    # local ranks share a host: h2 has ranks 2 and 3
    assert (info.local_rank_id, info.local_rank_size) == (1, 2)


def test_rank_table(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK_TABLE_FILE", rank_table(tmp_path, [("10.0.0.1", [0, 1]), ("10.0.0.2", [2, 3])]))
    monkeypatch.setenv("RANK_ID", "3")
    monkeypatch.setenv("RANK_SIZE", "4")
    info = read_ranks()
    assert (info.rank_id, info.rank_size, info.local_rank_id, info.local_rank_size) == (3, 4, 1, 2)
    assert info.server_ids == ("10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2")


def test_rank_table_gives_the_size_when_rank_size_is_unset(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK_TABLE_FILE", rank_table(tmp_path, [("10.0.0.1", [0, 1, 2])]))
    monkeypatch.setenv("RANK_ID", "1")
    assert ranks.get_rank_size() == 3 and ranks.get_rank_id() == 1


@pytest.mark.parametrize("env, message", [
    ({"RANK_ID": "1", "RANK_SIZE": "3", "TF_CONFIG": tf_config(["a:1", "a:2", "a:3"], 2)},
     "rank id differs between sources: RANK_ID/RANK_SIZE says 1, TF_CONFIG says 2"),
    ({"RANK_ID": "0", "RANK_SIZE": "2", "TF_CONFIG": tf_config(["a:1", "a:2", "a:3"], 0)},
     "rank size differs between sources: RANK_ID/RANK_SIZE says 2, TF_CONFIG says 3"),
    ({"RANK_ID": "4", "RANK_SIZE": "4"}, "RANK_ID=4 is out of range: the rank size is 4"),
    ({"RANK_ID": "one", "RANK_SIZE": "4"}, "RANK_ID: got 'one'"),
    ({"RANK_ID": "1"}, "RANK_ID=1 needs RANK_SIZE"),
    ({"RANK_SIZE": "2"}, "RANK_SIZE=2 needs RANK_ID"),
    ({"TF_CONFIG": tf_config(["a:1"], 0, task_type="ps").replace('"worker"', '"ps"', 1)}, "'ps' task, which has no rank"),
    ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not valid JSON"),
])
def test_inconsistent_sources_are_clear_errors(monkeypatch, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RankConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_ranks()


def test_rank_table_size_must_match_rank_size(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK_TABLE_FILE", rank_table(tmp_path, [("s", [0, 1])]))
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "4")
    with pytest.raises(RankConfigError, match="RANK_ID/RANK_SIZE says 4, RANK_TABLE_FILE says 2"):
        read_ranks()


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ('{"server_list": []}', "non-empty 'server_list'"),
    ('{"server_list": [{"server_id": "s", "device": [{"device_id": "0", "rank_id": "0"}, '
     '{"device_id": "1", "rank_id": "2"}]}]}', r"rank ids must be 0..1 without gaps or repeats; got \[0, 2\]"),
    ('{"server_list": [{"server_id": "s", "device": [{"device_id": "0"}]}]}', "without an integer 'rank_id'"),
])
def test_bad_rank_tables(monkeypatch, tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    monkeypatch.setenv("RANK_TABLE_FILE", str(path))
    monkeypatch.setenv("RANK_ID", "0")
    with pytest.raises(RankConfigError, match=message):
        read_ranks()


def test_missing_rank_table(monkeypatch, tmp_path):
    monkeypatch.setenv("RANK_TABLE_FILE", str(tmp_path / "missing.json"))
    with pytest.raises(RankConfigError, match="RANK_TABLE_FILE: cannot read"):
        read_ranks()


def test_groups(monkeypatch):
    monkeypatch.setenv("RANK_ID", "2")
    monkeypatch.setenv("RANK_SIZE", "4")
    ranks.create_group("pair", 2, [1, 2])
    assert ranks.get_rank_size("pair") == 2
    assert ranks.get_rank_id("pair") == 1
    assert ranks.get_world_rank_from_group_rank("pair", 0) == 1
    assert ranks.get_group_rank_from_world_rank(2, "pair") == 1
    # the key depends only on the name and members, so ranks that created other groups agree
    key = ranks.group_key("pair")
    ranks.destroy_group("pair")
    ranks.create_group("other", 2, [2, 3])
    ranks.create_group("pair", 2, [1, 2])
    assert ranks.group_key("pair") == key != ranks.group_key("other")
    assert ranks.group_key() == 1


@pytest.mark.parametrize("args, message", [
    (("hccl_world_group", 2, [0, 1]), "default group and cannot be created"),
    (("g", 2, [0, 1]), r"this process \(rank 2\) is not in rank_ids"),
    (("g", 3, [0, 2]), "must be 3 distinct ranks"),
    (("g", 2, [2, 9]), r"must be world ranks in \[0, 3\]"),
    (("", 1, [2]), "group must be a name"),
])
def test_bad_groups(monkeypatch, args, message):
    monkeypatch.setenv("RANK_ID", "2")
    monkeypatch.setenv("RANK_SIZE", "4")
    with pytest.raises(ValueError, match=message):
        ranks.create_group(*args)


def test_unknown_group_is_named():
    with pytest.raises(ValueError, match="no group named 'nope'"):
        ranks.get_rank_size("nope")


def test_a_device_number_as_rank_id_of_a_one_rank_run_is_rank_0_with_a_warning(monkeypatch):
    # Ascend one-device launch scripts: `export RANK_SIZE=1; export RANK_ID=$ASCEND_DEVICE_ID` (16 ModelZoo folders)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = ranks._read_ranks({"RANK_SIZE": "1", "RANK_ID": "4"})
    assert (info.rank_id, info.rank_size) == (0, 1), info
    assert any("RANK_ID=4 with RANK_SIZE=1" in str(w.message) for w in caught), [str(w.message) for w in caught]
