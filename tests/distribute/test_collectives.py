"""HCCL collectives across 2 and 3 processes on 127.0.0.1, and their argument rules in one process."""
import pytest

from .conftest import assert_ok, run_ranks


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_across_processes(n, out):
    results = run_ranks("collectives.py", n, out, timeout=60)
    assert_ok(results)
    values = [r.results(out) for r in results]
    ranks = range(n)
    for rank, got in zip(ranks, values):
        assert got["sum"] == [sum(r + 1.0 for r in ranks), sum(10.0 * (r + 1) for r in ranks)]
        assert got["max"] == [float(n), 10.0 * n]
        assert got["min"] == [1.0, 10.0]
        prod = 1.0
        for r in ranks:
            prod *= r + 1
        assert got["prod"] == [prod, prod * 10 ** n]
        assert got["int_sum"] == [sum(ranks)]
        # allgather concatenates in rank order along the first dimension
        assert got["gather"] == [[float(r)] for r in ranks for _ in range(2)]
        # broadcast of a list gives a list with the root's values
        assert got["bcast_list"] == [[n - 1.0, -1.0], 7 * (n - 1)]
        # reduce_scatter: the sum over ranks of range(2n) * (r + 1); rank i keeps rows 2i, 2i+1
        total = sum(r + 1 for r in ranks)
        assert got["scatter"] == [[float(2 * rank) * total], [float(2 * rank + 1) * total]]
    if n == 3:
        assert values[0]["group_sum"] == values[2]["group_sum"] == [4.0]
        # root_rank is a group rank: group rank 1 is world rank 2
        assert values[0]["group_bcast"] == values[2]["group_bcast"] == [2.0]
        assert "group_sum" not in values[1]


def test_single_rank_collectives_return_their_input(monkeypatch):
    import tensorflow as tf

    from npurun.distribute import hccl_ops

    for name in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE"):
        monkeypatch.delenv(name, raising=False)
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0]])
        outs = [hccl_ops.allreduce(x, "sum"), hccl_ops.allgather(x, 1), hccl_ops.broadcast([x], 0)[0],
                hccl_ops.reduce_scatter(x, "max", 1)]
        assert not [op for op in tf.compat.v1.get_default_graph().get_operations() if "Collective" in op.type]
        with tf.compat.v1.Session() as sess:
            for value in sess.run(outs):
                assert value.tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("call, message", [
    (lambda ops, x: ops.allreduce(x, "mean"), "reduction: got 'mean'; allowed: sum, max, min, prod"),
    (lambda ops, x: ops.allreduce(x, "sum", fusion=3), "allreduce: fusion got 3"),
    (lambda ops, x: ops.allgather(x, 3), r"allgather: rank_size=3 but group 'hccl_world_group' has 2 ranks"),
    (lambda ops, x: ops.reduce_scatter(x, "sum", 2), r"first dimension of \(3, 2\) must be a multiple of the rank "
                                                     r"size 2"),
    (lambda ops, x: ops.broadcast(x, 2), "root_rank=2 is not a rank of group"),
    (lambda ops, x: ops.broadcast(x, 0, fusion=1), "broadcast: fusion got 1"),
    (lambda ops, x: ops.allreduce(x, "sum", group="nope"), "no group named 'nope'"),
])
def test_argument_rules(monkeypatch, call, message):
    import tensorflow as tf

    from npurun.distribute import hccl_ops

    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "2")
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            call(hccl_ops, tf.zeros([3, 2]))


def test_hccl_timeout_is_the_run_deadline_not_an_op_timeout(monkeypatch):
    # A positive op timeout costs two TensorFlow threads per op run for the whole timeout
    # (collectives.py); hccl_timeout bounds the run instead (cluster.configure).
    import tensorflow as tf

    from npurun.distribute import cluster, hccl_ops, settings

    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.delenv("HCCL_EXEC_TIMEOUT", raising=False)
    with tf.Graph().as_default():
        default = hccl_ops.allreduce(tf.zeros([2]), "sum")
        with settings.use(hccl_timeout=7):
            seven = hccl_ops.allreduce(tf.zeros([2]), "sum")
            assert cluster.configure().operation_timeout_in_ms == 7000
            assert cluster.configure(runs_per_step=10).operation_timeout_in_ms == 70000  # a device loop
            mine = tf.compat.v1.ConfigProto(operation_timeout_in_ms=1234)  # op_wait_timeout's: kept
            assert cluster.configure(mine).operation_timeout_in_ms == 1234
        assert cluster.configure().operation_timeout_in_ms == 1800 * 1000
        explicit = hccl_ops.allreduce(tf.zeros([2]), "sum", timeout=5)
        monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "99")
        from_env = hccl_ops.allgather(tf.zeros([2]), 2)
        assert cluster.configure().operation_timeout_in_ms == 99 * 1000
        assert [op.op.get_attr("timeout_seconds") for op in (default, seven, from_env)] == [0.0] * 3
        assert explicit.op.get_attr("timeout_seconds") == 5.0  # asked for: TensorFlow's own op timeout
        assert default.op.get_attr("communication_hint") == b"ring"  # CPU-only machine
        # each op has its own instance key, in creation order
        keys = [int(tf.get_static_value(op.op.inputs[3])) for op in (default, seven, from_env)]
        assert keys == sorted(keys) and len(set(keys)) == 3


def test_collective_steps_leave_no_threads_behind(out):
    # A positive op timeout made TensorFlow keep two threads per collective op run alive for the
    # whole timeout (1800 s): +500 threads over these 250 steps, 4,100 after 2,000 (collectives.py).
    results = run_ranks("thread_count.py", 2, out, timeout=60, extra={"all": {"STEPS": "300", "WARMUP": "50"}})
    assert_ok(results)
    got = [r.results(out) for r in results]
    for rank in got:
        counts = rank["threads"]
        assert counts["300"] - counts["50"] < 25, counts  # 250 gradient all-reduces: no thread per run
        assert rank["deadline_ms"] == 1800 * 1000  # hccl_timeout still bounds every run
    assert got[0]["weights"] == got[1]["weights"]  # the same averaged updates on both ranks
    assert got[0]["weights"] != [0.0, 0.0]
