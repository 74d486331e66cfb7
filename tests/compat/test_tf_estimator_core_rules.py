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


def _spec(*args, **kwargs):
    from npurun.estimator.spec import EstimatorSpec

    return EstimatorSpec(*args, **kwargs)


def test_evaluation_reports_the_mean_loss_under_loss_metric_key(tmp_path):
    from npurun.estimator.spec import LOSS_METRIC_KEY
    from npurun.tf_estimator import Estimator

    def model_fn(features, labels, mode):
        # the loss is 2, 4, 6, ... over the evaluation's steps: its mean is reported, not the last value
        counter = v1.get_variable("counter", [], initializer=v1.zeros_initializer(),
                                  collections=[v1.GraphKeys.LOCAL_VARIABLES])
        loss = 2.0 * v1.assign_add(counter, 1.0) + tf.reduce_mean(features["x"]) * 0.0
        return _spec(mode, loss=loss, train_op=v1.assign_add(v1.train.get_global_step(), 1))

    estimator = Estimator(model_fn, model_dir=str(tmp_path))
    estimator.train(_input_fn, steps=1)
    scores = estimator.evaluate(lambda: _input_fn().map(lambda x, y: (x, y)).repeat(), steps=5)
    assert LOSS_METRIC_KEY == "loss" and scores[LOSS_METRIC_KEY] == pytest.approx(6.0)


def test_a_model_whose_variable_shape_changed_is_told_so_not_sent_to_older_checkpoints(tmp_path):
    # tf.estimator raises TensorFlow's InvalidArgumentError ("Restoring from checkpoint failed ... a mismatch between
    # the current graph and the graph from the checkpoint"); the older checkpoints were written by the same old
    # model, so trying them (as for a damaged file) ended in "None of the checkpoints restores", which misleads.
    # TF 1 (ref) variables, as after tf.compat.v1.disable_v2_behavior(): their restore op checks the shape itself.
    from npurun.tf_estimator import Estimator, RunConfig

    def model_fn(features, labels, mode, params):
        v1.Variable(params["weight"], name="weight", use_resource=False)  # a scalar, then a vector
        return _spec(mode, loss=tf.reduce_mean(features["x"]), train_op=v1.assign_add(v1.train.get_global_step(), 1))

    config = RunConfig(save_checkpoints_steps=2)
    Estimator(model_fn, str(tmp_path), config, params={"weight": 1}).train(_input_fn, steps=4)
    changed = Estimator(model_fn, str(tmp_path), config, params={"weight": [1]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Restoring from checkpoint failed.*a mismatch between"):
        changed.train(_input_fn, steps=1)


TF1_BEHAVIOUR_PREMADE_SCRIPT = """
import numpy as np
import npurun.estimator_api  # noqa: F401  (tf.estimator on plain python, without npurun run)
import tensorflow as tf

tf.compat.v1.disable_v2_behavior()  # TF 1 graph mode: tf.compat.v1 feature columns would make ref variables
wire = tf.feature_column.categorical_column_with_hash_bucket("wire", 3)
estimator = tf.estimator.DNNClassifier(hidden_units=[4], model_dir="model", optimizer="Adagrad",
                                       feature_columns=[tf.feature_column.embedding_column(wire, 2)])
features = {"wire": np.array([["a"], ["b"], ["c"], ["a"]])}
estimator.train(lambda: tf.data.Dataset.from_tensor_slices((features, [[1], [0], [1], [0]])).batch(2), steps=2)
print("trained", estimator.get_variable_value("global_step"))
"""


def test_premade_estimators_train_after_disable_v2_behavior(tmp_path):
    # an embedding column's weights as a ref variable: the Keras optimizer's slots could not be made for them
    # ("Tensor conversion requested dtype float32_ref"); tf.estimator 2.15's premade ones made resource variables
    import os
    import subprocess
    import sys

    import npurun

    (tmp_path / "premade.py").write_text(TF1_BEHAVIOUR_PREMADE_SCRIPT)
    source = os.path.dirname(os.path.dirname(npurun.__file__))  # the npurun under test, whatever the cwd
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join([source, os.environ.get(
        "PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "premade.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "trained 2" in done.stdout
