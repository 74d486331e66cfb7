"""tf.estimator conformance of RunConfig: argument checks, masters and the distributed session_config,
as tf.estimator.RunConfig (TensorFlow 2.15's) has them; a behaviour each."""
import json

import pytest
import tensorflow as tf

from npurun.tf_estimator.run_config import RunConfig

CLUSTER = {"chief": ["host0:0"], "ps": ["host1:1", "host2:2"], "worker": ["host3:3", "host4:4"]}


def _config_with(monkeypatch, tf_config, **kwargs):
    """A RunConfig made while TF_CONFIG is `tf_config`; TF_CONFIG is gone again afterwards."""
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    config = RunConfig(**kwargs)
    monkeypatch.delenv("TF_CONFIG")
    return config


@pytest.fixture(autouse=True)
def _no_cluster(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE"):
        monkeypatch.delenv(name, raising=False)


def test_kept_arguments_are_checked():
    with pytest.raises(ValueError, match="experimental_max_worker_delay_secs must be an integer if set"):
        RunConfig(experimental_max_worker_delay_secs="5")
    with pytest.raises(ValueError, match="session_creation_timeout_secs should be > 0"):
        RunConfig().replace(session_creation_timeout_secs=0)
    assert RunConfig(experimental_max_worker_delay_secs=5).experimental_max_worker_delay_secs == 5


def test_a_tf2_parameter_server_strategy_is_refused():
    strategy_class = tf.distribute.experimental.ParameterServerStrategy
    for name in ("train_distribute", "eval_distribute"):
        with pytest.raises(ValueError, match="Please use `tf.compat.v1.distribute.experimental.ParameterServer"):
            RunConfig(**{name: strategy_class.__new__(strategy_class)})


def test_masters_are_read_when_the_config_is_made(monkeypatch):
    local = _config_with(monkeypatch, {"eval_session_master": "_my_eval_master"})
    assert (local.master, local.evaluation_master) == ("", "_my_eval_master")
    evaluator = _config_with(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0},
                                           "eval_session_master": "grpc://123"})
    assert (evaluator.master, evaluator.evaluation_master) == ("", "grpc://123")
    worker = _config_with(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1},
                                        "eval_session_master": "grpc://123"})
    assert (worker.master, worker.evaluation_master) == ("grpc://host4:4", "")


def test_a_cluster_of_one_task_runs_in_process(monkeypatch):
    for job in ("chief", "master"):
        config = _config_with(monkeypatch, {"cluster": {job: ["host0:0"]}, "task": {"type": job, "index": 0}})
        assert config.master == "" and config.is_chief and config.task_type == job


@pytest.mark.parametrize("task_type,task_id,filters", [
    ("chief", 0, ["/job:ps", "/job:chief"]),
    ("worker", 1, ["/job:ps", "/job:worker/task:1"]),
    ("ps", 0, ["/job:ps", "/job:worker", "/job:chief", "/job:master"]),
    ("evaluator", 0, None),
])
def test_a_cluster_task_gets_tf_estimators_default_session_config(monkeypatch, task_type, task_id, filters):
    config = _config_with(monkeypatch, {"cluster": CLUSTER, "task": {"type": task_type, "index": task_id}})
    if filters is None:
        assert config.session_config is None
        return
    assert list(config.session_config.device_filters) == filters
    assert config.session_config.allow_soft_placement
    given = tf.compat.v1.ConfigProto(log_device_placement=True)
    assert _config_with(monkeypatch, {"cluster": CLUSTER, "task": {"type": task_type, "index": task_id}},
                        session_config=given).session_config.log_device_placement
    assert RunConfig().session_config is None
