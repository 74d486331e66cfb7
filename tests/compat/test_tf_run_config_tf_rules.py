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


def test_a_one_device_strategy_trains_as_without_one_and_says_nothing_untrue(recwarn):
    strategies = {"OneDeviceStrategy": tf.distribute.OneDeviceStrategy("/cpu:0"),
                  "default": tf.distribute.get_strategy(),
                  "MirroredStrategy": tf.distribute.MirroredStrategy(["/cpu:0"])}
    for strategy in strategies.values():
        config = RunConfig(train_distribute=strategy, eval_distribute=strategy)
        assert config.train_distribute is strategy and config.eval_distribute is strategy
        assert config.options["train_distribute"] is None and config._strategy_device is None  # where TF places it
    assert [str(w.message) for w in recwarn] == []
    # A one-device strategy naming a device TensorFlow would not choose places the model there.
    assert RunConfig(train_distribute=tf.distribute.OneDeviceStrategy("/gpu:1"))._strategy_device.endswith("GPU:1")


def test_a_strategy_over_several_devices_is_refused_with_the_command_that_runs_it(monkeypatch):
    # A MirroredStrategy over two devices of a machine that has them (this one may have one CPU device only,
    # and TensorFlow checks the devices once it is initialised): its device list, as the strategy keeps it.
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    two = ("/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1")
    monkeypatch.setattr(strategy.extended, "_devices", two)
    assert strategy.num_replicas_in_sync == 2
    for name in ("train_distribute", "eval_distribute"):
        with pytest.raises(ValueError) as error:
            RunConfig(**{name: strategy})
        message = str(error.value)
        assert f"{name}=MirroredStrategy over 2 devices" in message
        assert "/job:localhost/replica:0/task:0/device:CPU:1" in message
        assert "`npurun launch -n 2 script.py`" in message
    with pytest.raises(ValueError, match="npurun launch -n 2"):
        RunConfig().replace(train_distribute=strategy)


def test_a_tf1_parameter_server_strategy_is_npuruns_distribute_option(monkeypatch):
    strategy_class = tf.compat.v1.distribute.experimental.ParameterServerStrategy
    strategy = strategy_class.__new__(strategy_class)
    config = _config_with(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 0}},
                          train_distribute=strategy)
    assert config.options["distribute"] is strategy and config.train_distribute is strategy


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
