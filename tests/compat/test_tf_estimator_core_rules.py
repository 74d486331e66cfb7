"""tf.estimator 2.15's rules for the Estimator itself, RunConfig, train_and_evaluate, exporters and hooks, as npurun
keeps them: found by running tensorflow/estimator's own core tests against npurun (the harness is outside the repo;
see docs/tf_estimator.md). Each test is written here, cheap and in-process."""
import json

import numpy as np
import pytest
import tensorflow as tf

v1 = tf.compat.v1


def _input_fn():
    x = np.arange(4, dtype="float32")[:, None]
    return tf.data.Dataset.from_tensor_slices(({"x": x}, np.ones((4, 1), "float32"))).batch(2)


def test_run_config_task_type_names_the_tf_config_jobs(monkeypatch):
    from npurun.tf_estimator import run_config

    cluster = {"chief": ["host0:0"], "ps": ["host1:1"], "worker": ["host2:2", "host3:3"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}))
    config = run_config.RunConfig()
    assert config.task_type == run_config.TaskType.WORKER and config.task_id == 1
    assert (run_config.TaskType.CHIEF, run_config.TaskType.PS, run_config.TaskType.MASTER,
            run_config.TaskType.EVALUATOR) == ("chief", "ps", "master", "evaluator")


def test_add_metrics_to_a_premade_estimator(tmp_path):
    # a premade estimator takes feature columns, not a model_fn: add_metrics gives an Estimator of its model_fn
    from npurun.estimator.add_metrics import add_metrics
    from npurun.tf_estimator import Estimator, RunConfig
    from npurun.tf_estimator.canned import LinearClassifier

    premade = LinearClassifier([tf.feature_column.numeric_column("x")], model_dir=str(tmp_path),
                               config=RunConfig(save_checkpoints_steps=10))

    def metric_fn(features):
        mean = tf.keras.metrics.Mean()
        mean.update_state(features["x"])
        return {"mean_x": mean}

    extended = add_metrics(premade, metric_fn)
    assert type(extended) is Estimator and extended.model_dir == premade.model_dir
    extended.train(_input_fn, steps=2)
    metrics = extended.evaluate(_input_fn)
    assert metrics["mean_x"] == pytest.approx(1.5)
    assert "auc" in metrics  # the premade estimator's own metrics are kept
