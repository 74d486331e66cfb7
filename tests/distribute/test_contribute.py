"""The plan contributor: what a session plan gets for the distributed options (one process, graphs
inspected; the server start is replaced by a recorder so no port is opened)."""
import json

import pytest
import tensorflow as tf

from npurun import NPURunConfig
from npurun.distribute import cluster, ps, settings
from npurun.distribute.hooks import NPUBroadcastGlobalVariablesHook, StartupHook
from npurun.distribute.optimizer import NPUDistributedOptimizer, collective_count
from npurun.distribute.ranks import RankConfigError
from npurun.runtime.contributors import build_plan


@pytest.fixture
def servers(monkeypatch):
    for name in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE", "HCCL_EXEC_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    started = []

    class Server:  # what the plan reads of a tf.distribute.Server
        def __init__(self, layout):
            self.target = "grpc://" + layout.address

    def ensure_server(config=None, layout=None):
        started.append((config, layout))
        return Server(layout)

    monkeypatch.setattr(cluster, "ensure_server", ensure_server)
    yield started
    settings.activate(settings.DistributeSettings())


def two_ranks(monkeypatch, index=1):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
                                                "task": {"type": "worker", "index": index}}))


def test_single_process_plan_is_unchanged(servers):
    plan = build_plan(NPURunConfig().options, "train")
    assert not [h for h in plan.hooks if isinstance(h, (StartupHook, NPUBroadcastGlobalVariablesHook))]
    assert list(plan.config_proto.device_filters) == []
    assert plan.config_proto.experimental.collective_group_leader == ""
    assert plan.target == "" and plan.wait_for_initialization is None
    assert servers == []


def test_two_ranks_train_plan(servers, monkeypatch):
    two_ranks(monkeypatch)
    plan = build_plan(NPURunConfig().options, "train")
    proto = plan.config_proto
    assert proto.experimental.collective_group_leader == "/job:worker/replica:0/task:0"
    assert list(proto.device_filters) == ["/job:worker/replica:0/task:1"]
    kinds = [type(h) for h in plan.hooks]
    assert StartupHook in kinds and NPUBroadcastGlobalVariablesHook in kinds
    # the server is started with the same collective settings the session gets
    assert servers and servers[0][0].experimental.collective_group_leader == proto.experimental.collective_group_leader
    assert plan.target == "grpc://127.0.0.1:2"  # this task's server
    assert plan.wait_for_initialization is None


def test_eval_plan_gets_the_runtime_but_no_hooks(servers, monkeypatch):
    two_ranks(monkeypatch)
    plan = build_plan(NPURunConfig().options, "eval")
    assert list(plan.config_proto.device_filters) == ["/job:worker/replica:0/task:1"]
    assert not [h for h in plan.hooks if isinstance(h, (StartupHook, NPUBroadcastGlobalVariablesHook))]


def test_horovod_mode_adds_no_broadcast(servers, monkeypatch):
    two_ranks(monkeypatch)
    with pytest.warns(UserWarning, match="horovod_mode"):
        config = NPURunConfig(horovod_mode=True)
    kinds = [type(h) for h in build_plan(config.options, "train").hooks]
    assert StartupHook in kinds and NPUBroadcastGlobalVariablesHook not in kinds


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_ranks_without_tf_config_get_their_servers_target(servers, monkeypatch, mode):
    # RANK_ID / RANK_SIZE only: the cluster is derived (127.0.0.1, NPURUN_BASE_PORT + local rank)
    monkeypatch.setenv("RANK_ID", "1")
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("NPURUN_BASE_PORT", "31000")
    plan = build_plan(NPURunConfig().options, mode)
    assert plan.target == "grpc://127.0.0.1:31001"
    layout = servers[0][1]
    assert (layout.address, layout.rank_id, layout.rank_size) == ("127.0.0.1:31001", 1, 2)
    assert plan.config_proto.experimental.collective_group_leader == "/job:worker/replica:0/task:0"
    assert list(plan.config_proto.device_filters) == ["/job:worker/replica:0/task:1"]
    assert (StartupHook in [type(h) for h in plan.hooks]) == (mode == "train")


def test_conflicting_rank_sources_fail_the_plan(servers, monkeypatch):
    two_ranks(monkeypatch, index=1)
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "2")
    with pytest.raises(RankConfigError, match="rank id differs between sources: RANK_ID/RANK_SIZE says 0, "
                                              "TF_CONFIG says 1"):
        build_plan(NPURunConfig().options, "train")


def grads_graph():
    """A graph with three dense variables minimised by NPUDistributedOptimizer (2 ranks)."""
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.get_variable(f"v{i}", initializer=tf.ones([2, 2])) for i in range(3)]
        loss = tf.add_n([tf.reduce_sum(v * v) for v in variables])
        NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1)).minimize(loss)
    return graph


def test_hccl_timeout_and_hcom_parallel_reach_the_graph(servers, monkeypatch):
    two_ranks(monkeypatch, index=0)
    plan = build_plan(NPURunConfig(hccl_timeout=7, hcom_parallel=True).options, "train")
    graph = grads_graph()
    reduces = [op for op in graph.get_operations() if op.type == "CollectiveReduceV2"]
    assert len(reduces) == 3  # one per gradient
    # hccl_timeout is the run deadline of the rank's sessions; the ops carry none (no thread per run)
    assert plan.config_proto.operation_timeout_in_ms == 7000
    assert {op.get_attr("timeout_seconds") for op in reduces} == {0.0}
    plan = build_plan(NPURunConfig(hcom_parallel=False).options, "train")
    graph = grads_graph()
    assert collective_count(graph) == 1  # one grouped all-reduce
    # hccl_timeout unset: HCCL_EXEC_TIMEOUT, else HCCL's default 1800 s
    assert plan.config_proto.operation_timeout_in_ms == 1800 * 1000
    # a device loop of 5 collective steps per run: 5 x hccl_timeout; op_wait_timeout, when set, is the deadline
    assert build_plan(NPURunConfig(hccl_timeout=7, iterations_per_loop=5).options,
                      "train").config_proto.operation_timeout_in_ms == 35000
    assert build_plan(NPURunConfig(hccl_timeout=7, op_wait_timeout=3).options,
                      "train").config_proto.operation_timeout_in_ms == 3000


def test_is_tailing_optimization_must_match_npu_optimizer(servers):
    from npurun.precision import NPUOptimizer

    def graph_with(tailing):
        graph = tf.Graph()
        with graph.as_default():
            v = tf.compat.v1.get_variable("v", initializer=1.0)
            NPUOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1),
                         is_tailing_optimization=tailing).minimize(v * v)
        return graph

    plan = build_plan(NPURunConfig(is_tailing_optimization=True).options, "train")
    for transform in plan.graph_transforms:
        transform(graph_with(True), "train")  # equal: fine
    with pytest.raises(ValueError, match="is_tailing_optimization"):
        for transform in plan.graph_transforms:
            transform(graph_with(False), "train")


@pytest.mark.parametrize("option, value", [("hccl_timeout", 7), ("hcom_parallel", True),
                                           ("is_tailing_optimization", True)])
def test_implemented_options_do_not_warn(option, value):
    import warnings

    from npurun.config import OPTIONS

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NPURunConfig(**{option: value})
    assert OPTIONS[option].status == "effect"


def test_parameter_server_plans(servers, monkeypatch):
    from npurun.config import OPTIONS

    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                                                            "ps": ["127.0.0.1:3"]},
                                                "task": {"type": "worker", "index": 1}}))
    strategy = tf.compat.v1.distribute.experimental.ParameterServerStrategy()
    config = NPURunConfig(distribute=strategy)
    assert OPTIONS["distribute"].status == "effect"
    train = build_plan(config.options, "train")
    assert list(train.config_proto.device_filters) == ["/job:worker/replica:0/task:1", "/job:ps"]
    assert [type(h) for h in train.hooks if isinstance(h, (StartupHook, NPUBroadcastGlobalVariablesHook))] \
        == [StartupHook]  # variables are shared on the ps: nothing to broadcast
    # the graph transforms place variables on the ps
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable("v", initializer=1.0)
        (v * 2.0).op  # noqa: B018 - an op for the worker
    for transform in train.graph_transforms:
        transform(graph, "train")
    assert v.op.device == "/job:ps/task:0"
    assert graph.get_operation_by_name("mul").device == "/job:worker/replica:0/task:1"
    assert train.target == "grpc://127.0.0.1:2"
    # worker 1 is not the chief: it waits for the chief's initialisation through the readiness op
    # the transforms added (no initializer of its own is changed)
    assert train.wait_for_initialization is not None
    assert graph.get_collection(ps.READY_COLLECTION) == [ps.uninitialized_variables(graph)]
    assert v.initializer.type == "AssignVariableOp"
    # evaluation and export run locally from the checkpoint, and initialise nothing shared
    evaluation = build_plan(config.options, "eval")
    assert list(evaluation.config_proto.device_filters) == ["/job:worker/replica:0/task:1"]
    assert evaluation.wait_for_initialization is None


def test_parameter_server_chief_initialises(servers, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                                                            "ps": ["127.0.0.1:3"]},
                                                "task": {"type": "worker", "index": 0}}))
    config = NPURunConfig(distribute=tf.compat.v1.distribute.experimental.ParameterServerStrategy())
    train = build_plan(config.options, "train")
    assert train.wait_for_initialization is None
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.get_variable("v", initializer=1.0)
    for transform in train.graph_transforms:
        transform(graph, "train")
    assert graph.get_collection(ps.READY_COLLECTION) == []


def test_evaluator_task_runs_alone(servers, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
                                                "task": {"type": "evaluator", "index": 0}}))
    plan = build_plan(NPURunConfig().options, "eval")
    assert list(plan.config_proto.device_filters) == [] and servers == []
