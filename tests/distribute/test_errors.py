"""Collective failures become CollectiveTimeoutError naming rank, rank size and hccl_timeout; other
errors pass unchanged. One process: a collective of group size 2 whose peer never comes times out
for real after hccl_timeout=1 s, the run deadline `cluster.configure` gives the session (each test
uses a new session: a timed-out collective aborts only its own session's collectives)."""
import time

import pytest
import tensorflow as tf
from tensorflow.python.ops import collective_ops

from npurun import NPURunConfig
from npurun.distribute import cluster, errors, hccl_ops, settings
from npurun.distribute.errors import CollectiveTimeoutError

v1 = tf.compat.v1


@pytest.fixture
def rank0_of_2(monkeypatch):
    for name in ("TF_CONFIG", "RANK_TABLE_FILE", "HCCL_EXEC_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "2")


def lonely_allreduce(timeout=1):
    """An all-reduce over 2 ranks whose peer never runs it: DeadlineExceededError after `timeout` s."""
    graph = tf.Graph()
    with graph.as_default(), settings.use(hccl_timeout=timeout):
        total = hccl_ops.allreduce(tf.constant([1.0]), "sum")
    return graph, total


def deadline_config(timeout=1):
    """The session config of a collective rank: hccl_timeout as its run deadline."""
    with settings.use(hccl_timeout=timeout):
        config = cluster.configure()
    assert config.operation_timeout_in_ms == timeout * 1000
    del config.device_filters[:]  # an in-process session: its task is localhost
    return config


def test_a_timed_out_collective_names_rank_size_and_hccl_timeout(rank0_of_2):
    graph, total = lonely_allreduce()
    with v1.Session(graph=graph, config=deadline_config()) as session:
        started = time.monotonic()
        with pytest.raises(CollectiveTimeoutError) as caught:
            with errors.explained(NPURunConfig(hccl_timeout=1)):
                session.run(total)
        assert time.monotonic() - started < 1 + 5
        error = caught.value
        assert str(error).startswith("rank 0 of 2: a collective operation did not complete within hccl_timeout=1 s: ")
        assert str(error).endswith("TensorFlow (DeadlineExceededError): Timed out waiting for notification")
        assert isinstance(error.__cause__, tf.errors.DeadlineExceededError)
        assert (error.rank_id, error.rank_size, error.timeout) == (0, 2, 1)
        # the session's next collective is aborted by the first failure: explained as well
        with pytest.raises(CollectiveTimeoutError, match=r"^rank 0 of 2: .*hccl_timeout=1 s"):
            with errors.explained(NPURunConfig(hccl_timeout=1)):
                session.run(total)


def test_distributed_session_explains_its_runs(rank0_of_2):
    graph, total = lonely_allreduce()
    session_type = cluster.session_class()
    with session_type("", graph=graph, config=deadline_config(), settings=settings.DistributeSettings(hccl_timeout=1),
                      run_deadline=True) as session:
        assert isinstance(session, v1.Session)
        with pytest.raises(CollectiveTimeoutError, match=r"^rank 0 of 2: .*hccl_timeout=1 s") as caught:
            session.run(total)
        assert isinstance(caught.value.__cause__, tf.errors.DeadlineExceededError)


def test_create_session_gives_a_distributed_session(monkeypatch):
    for name in ("TF_CONFIG", "RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE"):
        monkeypatch.delenv(name, raising=False)
    graph = tf.Graph()
    with graph.as_default():
        # group size 2 by hand (the world has one rank): nobody else will ever join
        total = collective_ops.all_reduce_v2(tf.constant([1.0]), 2, 4242, 1, merge_op="Add", final_op="Id",
                                             communication_hint="ring", timeout=1.0)
    with settings.use(hccl_timeout=1), cluster.create_session(graph=graph) as session:
        assert isinstance(session, cluster.session_class())
        with pytest.raises(CollectiveTimeoutError, match=r"^rank 0 of 1: .*hccl_timeout=1 s"):
            session.run(total)


def test_other_errors_pass_unchanged(rank0_of_2):
    graph = tf.Graph()
    with graph.as_default():
        iterator = v1.data.make_one_shot_iterator(tf.data.Dataset.range(1))
        element = iterator.get_next()
        queue = tf.queue.FIFOQueue(1, tf.float32)
        dequeue = queue.dequeue()
    config = v1.ConfigProto(operation_timeout_in_ms=200)
    with v1.Session(graph=graph, config=config) as session:
        session.run(element)
        with pytest.raises(tf.errors.OutOfRangeError):
            with errors.explained(NPURunConfig(hccl_timeout=1)):
                session.run(element)
        # a DeadlineExceededError that is not a collective's (operation_timeout_in_ms)
        with pytest.raises(tf.errors.DeadlineExceededError) as caught:
            with errors.explained():
                session.run(dequeue)
        assert errors.explain(caught.value, 0, 2, 1) is caught.value
    with pytest.raises(ValueError, match="plain"):
        with errors.explained():
            raise ValueError("plain")


def peer_error(kind, text):
    return kind(None, None, text)


@pytest.mark.parametrize("kind, text, what", [
    (tf.errors.UnavailableError, "failed to connect to all addresses; Socket closed",
     "lost its connection to a peer rank (collectives wait up to hccl_timeout=9 s)"),
    (tf.errors.CancelledError, "Collective ops is aborted by: Collective has timed out waiting for other workers.",
     "was aborted because an earlier collective of this process failed (collectives wait up to hccl_timeout=9 s"),
    (tf.errors.AbortedError, "RecvBuf returned an error", "was aborted because an earlier collective"),
])
def test_each_kind_of_peer_failure_gets_its_own_sentence(rank0_of_2, kind, text, what):
    with pytest.raises(CollectiveTimeoutError) as caught:
        with errors.explained(settings.DistributeSettings(hccl_timeout=9)):
            raise peer_error(kind, text)
    assert str(caught.value).startswith(f"rank 0 of 2: a collective operation {what}")
    assert isinstance(caught.value.__cause__, kind)


def test_the_timeout_named_follows_the_source(rank0_of_2, monkeypatch):
    failure = "Collective has timed out waiting for other workers."

    def message(source):
        with pytest.raises(CollectiveTimeoutError) as caught:
            with errors.explained(source):
                raise peer_error(tf.errors.DeadlineExceededError, failure)
        return str(caught.value)

    assert "hccl_timeout=7 s" in message({"hccl_timeout": 7})  # an options mapping
    assert "hccl_timeout=1800 s" in message(NPURunConfig())  # HCCL's default
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "42")
    assert "hccl_timeout=42 s" in message(NPURunConfig())  # the environment when the option is unset
    with settings.use(hccl_timeout=3):
        assert "hccl_timeout=3 s" in message(None)  # None: the current settings
    with pytest.raises(TypeError, match="explained"):
        with errors.explained(42):
            pass


def test_a_run_deadline_counts_where_it_is_hccl_timeouts(rank0_of_2, monkeypatch):
    timed_out = peer_error(tf.errors.DeadlineExceededError, "Graph execution error:\n\nOperation timed out.")

    def explained_by(source, **kwargs):
        try:
            with errors.explained(source, **kwargs):
                raise timed_out
        except Exception as error:  # noqa: BLE001 - the test inspects what came out
            return error

    assert isinstance(explained_by(NPURunConfig(hccl_timeout=3)), CollectiveTimeoutError)  # configure's deadline
    assert isinstance(explained_by(None, run_deadline=True), CollectiveTimeoutError)  # a DistributedSession's
    assert explained_by(NPURunConfig(op_wait_timeout=3)) is timed_out  # the user's own run deadline
    assert explained_by(None) is timed_out
    in_process = peer_error(tf.errors.DeadlineExceededError, "Timed out waiting for notification")
    assert isinstance(errors.explain(in_process, 0, 2, 3, run_deadline=True), CollectiveTimeoutError)
    monkeypatch.setenv("RANK_SIZE", "1")
    assert explained_by(NPURunConfig(hccl_timeout=3)) is timed_out  # one rank: no collectives


def test_nested_blocks_explain_once(rank0_of_2):
    with pytest.raises(CollectiveTimeoutError) as caught:
        with errors.explained({"hccl_timeout": 4}):
            with errors.explained({"hccl_timeout": 5}):
                raise peer_error(tf.errors.DeadlineExceededError, "Collective has timed out")
    assert "hccl_timeout=5 s" in str(caught.value)
    assert isinstance(caught.value.__cause__, tf.errors.DeadlineExceededError)


def test_a_lost_parameter_server_is_named_with_its_deadline_not_as_a_collective(monkeypatch):
    """PS mode has no collectives: a worker's lost connection names the ps task and op_wait_timeout."""
    import json

    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                                                            "ps": ["10.0.0.9:3", "10.0.0.8:4"]},
                                                "task": {"type": "worker", "index": 1}}))
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE"):
        monkeypatch.delenv(name, raising=False)
    lost = tf.errors.UnavailableError(None, None, "From /job:ps/replica:0/task:1:\nSocket closed")
    with pytest.raises(errors.ParameterServerError) as caught:
        with errors.explained({"op_wait_timeout": 30}):
            raise lost
    text = str(caught.value)
    assert text.startswith("worker rank 1 of 2 (parameter-server mode): lost its connection to the parameter server: "
                           "ps 1 (10.0.0.8:4) stopped")
    assert "op_wait_timeout=30 s" in text and "ollective" not in text and "hccl_timeout" not in text
    assert caught.value.ps_tasks == ("ps 1",) and caught.value.__cause__ is lost
    with pytest.raises(errors.ParameterServerError, match="runs have no deadline in PS mode unless op_wait_timeout"):
        with errors.explained():
            raise tf.errors.UnavailableError(None, None, "failed to connect to all addresses")
