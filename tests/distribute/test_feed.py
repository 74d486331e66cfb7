"""local_rank_id / local_device_list: the feeding rank reads every element once, in its own process,
and deals the batches round-robin to the listed local ranks (tf.data service, coordinated reads)."""
import pytest

from .conftest import assert_ok, run_ranks

STEPS = 4


@pytest.mark.slow
@pytest.mark.parametrize("n, devices", [(2, "0,1"), (3, "1,2")], ids=["2ranks-0,1", "3ranks-1,2"])
def test_one_rank_reads_and_feeds_the_listed_ranks(n, devices, out):
    results = run_ranks("feed.py", n, out, args=(STEPS, devices), timeout=120)
    assert_ok(results)
    reports = {r.rank: r.results(out) for r in results}
    consumers = [int(d) for d in devices.split(",")]
    feeder_pid = reports[0]["pid"]
    reads = [line.split() for line in (out / "reads.log").read_text().splitlines()]
    # every element was read in the feeding rank's process, and read once
    assert {int(pid) for pid, _ in reads} == {feeder_pid}
    read_elements = [int(x) for _, x in reads]
    # the listed ranks were fed, round-robin: consumer i gets batches i, i+len, ...
    fed = {rank: reports[rank]["batches"] for rank in consumers}
    for rank in consumers:
        assert reports[rank]["fed"] is True
        k = consumers.index(rank)
        assert fed[rank] == [[3 * b, 3 * b + 1, 3 * b + 2] for b in range(k, k + len(consumers) * STEPS,
                                                                        len(consumers))]
    consumed = [x for rank in consumers for batch in fed[rank] for x in batch]
    assert len(consumed) == len(set(consumed))  # no element went to two ranks
    assert set(consumed) <= set(read_elements)
    if 0 not in consumers:
        # the feeding rank is not in the list: it read its own input as usual
        assert reports[0]["fed"] is False
        assert reports[0]["batches"][0] == [0, 1, 2]


def test_local_ranks_out_of_range_are_named(monkeypatch):
    from npurun.distribute import feed

    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "2")
    with pytest.raises(ValueError, match="option 'local_rank_id': got 2; this host has 2 local rank"):
        feed.resolve(2, None)
    with pytest.raises(ValueError, match=r"option 'local_device_list': device\(s\) \[3\] are not local ranks"):
        feed.resolve(0, "0,3")
    assert feed.resolve(0, None) == (0, (0, 1), 0)


def test_without_local_rank_id_the_dataset_is_unchanged(monkeypatch):
    import tensorflow as tf

    from npurun.distribute import feed

    dataset = tf.data.Dataset.range(3)
    assert feed.apply(dataset) is dataset


@pytest.mark.slow
def test_estimator_trains_on_the_batches_the_feeding_rank_deals(out):
    results = run_ranks("estimator_feed.py", 2, out, args=(STEPS, "0,1"), timeout=150)
    assert_ok(results)
    reports = {r.rank: r.results(out) for r in results}
    reads = [line.split() for line in (out / "reads.log").read_text().splitlines()]
    assert {int(pid) for pid, _ in reads} == {reports[0]["pid"]}, "only the feeding rank reads the input"
    for rank in (0, 1):
        # rank k trains on batches k, k + 2, ...: the round-robin deal of one pipeline
        assert reports[rank]["batches"] == [[3 * b, 3 * b + 1, 3 * b + 2] for b in range(rank, 2 * STEPS, 2)]
    # the fed input has no position to save: the checkpoints hold the model only
    import tensorflow as tf

    names = {name for name, _ in tf.train.list_variables(str(out / "model0"))}
    assert "global_step" in names and not any("iterator" in name.lower() for name in names)
    assert tf.train.load_checkpoint(str(out / "model0")).get_tensor("global_step") == STEPS
