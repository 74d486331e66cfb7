"""tf.estimator.RunConfig conformance: subclassing, None values and TF_CONFIG clusters, a behaviour each.

Causes found by running tensorflow/estimator's own run_config/early_stopping tests against npurun.
"""
import json

import numpy as np
import pytest
import tensorflow as tf

from npurun.tf_estimator import RunConfig

v1 = tf.compat.v1


pytestmark = pytest.mark.usefixtures("single_process")


def _set_tf_config(monkeypatch, cluster, task):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))


class ChiefSwitch(RunConfig):
    """What tf.estimator code does to test chief/non-chief paths: a subclass with its own __init__."""

    def __init__(self, is_chief):
        super().__init__()
        self._chief = is_chief

    @property
    def is_chief(self):
        return self._chief


def test_replace_keeps_a_subclass_and_its_own_attributes(tmp_path):
    replaced = ChiefSwitch(is_chief=False).replace(model_dir=str(tmp_path), save_checkpoints_steps=7)
    assert type(replaced) is ChiefSwitch
    assert replaced.is_chief is False
    assert (replaced.model_dir, replaced.save_checkpoints_steps, replaced.save_checkpoints_secs) == \
        (str(tmp_path), 7, None)


def test_an_estimator_takes_a_run_config_subclass_with_another_init(tmp_path):
    from npurun.tf_estimator import Estimator
    from npurun.estimator import EstimatorSpec

    def model_fn(features, labels, mode):
        w = v1.get_variable("w", [], initializer=v1.constant_initializer(3.0))
        loss = tf.square(w)
        train_op = v1.train.GradientDescentOptimizer(0.25).minimize(loss, v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = Estimator(model_fn, model_dir=str(tmp_path), config=ChiefSwitch(is_chief=True))
    assert type(estimator.config) is ChiefSwitch and estimator.config.model_dir == str(tmp_path)
    estimator.train(lambda: tf.data.Dataset.from_tensors(({"x": [0.0]}, [0.0])).repeat(), steps=2)
    # w <- w - 0.25 * 2w = w / 2 each step: 3 -> 1.5 -> 0.75
    assert np.isclose(estimator.get_variable_value("w"), 0.75)


def test_none_summary_steps_and_hours_are_accepted_and_read_back_as_none():
    config = RunConfig(save_summary_steps=None, keep_checkpoint_every_n_hours=None, keep_checkpoint_max=None)
    assert (config.save_summary_steps, config.keep_checkpoint_every_n_hours, config.keep_checkpoint_max) == \
        (None, None, None)
    # what npurun runs with: no summaries, the Saver's default hours
    assert (config.options["save_summary_steps"], config.options["keep_checkpoint_every_n_hours"]) == (0, 10000)
    replaced = RunConfig().replace(save_summary_steps=None)
    assert replaced.save_summary_steps is None and RunConfig().save_summary_steps == 100


def test_a_parameter_server_cluster_is_described(monkeypatch):
    cluster = {"chief": ["h0:1"], "ps": ["h1:1", "h2:1"], "worker": ["h3:1", "h4:1"]}
    _set_tf_config(monkeypatch, cluster, {"type": "worker", "index": 1})
    config = RunConfig()
    assert (config.task_type, config.task_id, config.num_ps_replicas, config.num_worker_replicas,
            config.is_chief) == ("worker", 1, 2, 3, False)
    assert config.cluster_spec.as_dict() == cluster


def test_training_in_a_parameter_server_cluster_without_a_strategy_is_the_error(monkeypatch, tmp_path):
    from npurun.tf_estimator import Estimator

    _set_tf_config(monkeypatch, {"chief": ["h0:1"], "ps": ["h1:1"]}, {"type": "chief", "index": 0})
    estimator = Estimator(lambda features, labels, mode: None, model_dir=str(tmp_path), config=RunConfig())
    with pytest.raises(ValueError, match="'ps' tasks: pass distribute="):
        estimator.train(lambda: tf.data.Dataset.from_tensors(({"x": [0.0]}, [0.0])), steps=1)
    assert not list(tmp_path.glob("*.index"))  # refused before anything ran


@pytest.mark.parametrize("cluster,task,message", [
    ({"worker": ["h:1"]}, {"type": "worker", "index": 0}, 'it must have one "chief" node'),
    ({"chief": ["h:1", "h:2"]}, {"type": "chief", "index": 0}, 'must have only one "chief" node'),
    ({"master": ["h:1"], "chief": ["h:2"]}, {"type": "master", "index": 0}, "job `chief` is not supported"),
    ({"master": ["h:1"]}, {"type": "evaluator", "index": 0}, "task_type `evaluator` is not supported"),
    ({"chief": ["h:1"]}, {"index": 0}, 'If "cluster" is set in TF_CONFIG, task type must be set'),
    ({"chief": ["h:1"]}, {"type": "chief"}, 'If "cluster" is set in TF_CONFIG, task index must be set'),
    ({"chief": ["h:1"]}, {"type": "chief", "index": -1}, "Task index must be non-negative number"),
    ({"chief": ["h:1"]}, {"type": "worker", "index": 0}, "worker is not a valid task_type in the cluster_spec"),
    ({"chief": ["h:1"]}, {"type": "chief", "index": 1}, "1 is not a valid task_id for task_type chief"),
    ({}, {"type": "chief", "index": 0}, 'If "cluster" is not set in TF_CONFIG, task type must be WORKER'),
    ({}, {"type": "worker", "index": 2}, 'If "cluster" is not set in TF_CONFIG, task index must be 0'),
])
def test_tf_config_errors_keep_tf_estimators_words(monkeypatch, cluster, task, message):
    _set_tf_config(monkeypatch, cluster, task)
    with pytest.raises(ValueError, match=message.replace("`", ".").replace("(", ".")):
        RunConfig()


def test_tf_config_model_dir_errors_keep_tf_estimators_words(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"model_dir": ""}))
    with pytest.raises(ValueError, match="model_dir in TF_CONFIG should be non-empty"):
        RunConfig()
    monkeypatch.setenv("TF_CONFIG", json.dumps({"model_dir": "/tmp/a"}))
    with pytest.raises(ValueError, match="must have the same value as the model_dir in TF_CONFIG"):
        RunConfig(model_dir="/tmp/b")


def test_code_may_hang_its_own_attributes_on_a_run_config_but_settings_stay_read_only(tmp_path):
    config = RunConfig(save_checkpoints_steps=5)
    config.i_am_test = True
    assert config.i_am_test is True
    assert config.replace(model_dir=str(tmp_path)).i_am_test is True
    with pytest.raises(AttributeError):
        config.save_checkpoints_steps = 6
    with pytest.raises(AttributeError):
        config.model_dir = str(tmp_path)
    assert config.save_checkpoints_steps == 5 and config.model_dir is None


def test_global_id_orders_the_chief_then_other_jobs_by_name_then_ps(monkeypatch):
    cluster = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "other": ["h3:1", "h4:1"], "ps": ["h5:1", "h6:1"]}
    ids = {}
    for job, addresses in cluster.items():
        for index in range(len(addresses)):
            _set_tf_config(monkeypatch, cluster, {"type": job, "index": index})
            ids[(job, index)] = RunConfig().global_id_in_cluster
    assert ids == {("chief", 0): 0, ("other", 0): 1, ("other", 1): 2, ("worker", 0): 3, ("worker", 1): 4,
                   ("ps", 0): 5, ("ps", 1): 6}
