"""tf.estimator conformance: behaviours of the classic Estimator (checked against TF 2.15's), a test each."""
import glob
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from npurun.tf_estimator import RunConfig
from .conftest import estimator_class as _estimator_class

v1 = tf.compat.v1
X = np.arange(24, dtype="float32").reshape(12, 2) / 24.0
Y = np.ones(12, dtype="float32")


pytestmark = pytest.mark.usefixtures("single_process")


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(2)


def make_model_fn(nan=False, scaffold_fn=None, chief_hooks=(), width=1):
    def model_fn(features, labels, mode):
        w = v1.get_variable("w", [2, width], initializer=v1.constant_initializer(0.5))
        logits = tf.reduce_sum(tf.matmul(features["x"], w), axis=1)
        loss = tf.reduce_mean(tf.square(logits - labels))
        if nan:
            loss = loss * np.float32("nan")
        from npurun.estimator import EstimatorSpec, ModeKeys

        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions={"logits": logits})
        op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=op, training_chief_hooks=list(chief_hooks),
                             scaffold=scaffold_fn() if scaffold_fn else None)
    return model_fn


def checkpoint_steps(model_dir):
    return sorted(int(re.search(r"-(\d+)\.index$", p).group(1)) for p in glob.glob(os.path.join(model_dir, "*.index")))


class CountRuns(v1.train.SessionRunHook):
    def __init__(self):
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_training_chief_hooks_run_on_the_chief(tmp_path):
    hook = CountRuns()
    est = _estimator_class()(make_model_fn(chief_hooks=[hook]), model_dir=str(tmp_path))
    est.train(input_fn, steps=4)
    assert hook.runs == 4


def test_replacing_one_checkpoint_interval_drops_the_other(tmp_path):
    config = RunConfig().replace(save_checkpoints_steps=3, keep_checkpoint_max=100)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (3, None)
    assert RunConfig(save_checkpoints_steps=3).replace(save_checkpoints_secs=60).save_checkpoints_steps is None
    est = _estimator_class()(make_model_fn(), model_dir=str(tmp_path), config=config)
    est.train(input_fn, steps=7)
    assert checkpoint_steps(str(tmp_path)) == [0, 3, 6, 7]  # TF 2.15's Estimator writes the same


def test_both_intervals_none_disables_checkpoints(tmp_path):
    config = RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (None, None)
    with pytest.raises(ValueError, match="cannot be both set"):
        RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    _estimator_class()(make_model_fn(), model_dir=str(tmp_path), config=config).train(input_fn, steps=3)
    assert checkpoint_steps(str(tmp_path)) == []


def test_cluster_spec_and_tf_config_keys(monkeypatch, tmp_path):
    cluster = {"chief": ["host0:2222"], "worker": ["host1:2222"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": cluster, "task": {"type": "worker", "index": 0}, "model_dir": str(tmp_path / "from_env"),
        "session_master": "grpc://elsewhere:1", "service": {"name": "svc"}}))
    config = RunConfig()
    assert isinstance(config.cluster_spec, tf.train.ClusterSpec)
    assert config.cluster_spec == tf.train.ClusterSpec(cluster)
    assert config.model_dir == str(tmp_path / "from_env")
    assert config.master == "grpc://elsewhere:1"
    assert config.service == {"name": "svc"}
    with pytest.raises(ValueError, match="model_dir are set both in constructor and TF_CONFIG"):
        RunConfig(model_dir=str(tmp_path / "other"))
    monkeypatch.setenv("TF_CONFIG", json.dumps({"service": "not a dict"}))
    with pytest.raises(TypeError, match='"service" is set in TF_CONFIG, it must be a dict'):
        RunConfig()


def test_config_model_dir_is_the_estimators(tmp_path):
    est = _estimator_class()(make_model_fn(), model_dir=str(tmp_path))
    assert est.config.model_dir == str(tmp_path) == est.model_dir


def test_scaffold_saver_may_be_an_object_checkpoint(tmp_path):
    def scaffold():
        variables = {v.op.name: v for v in v1.global_variables()}
        return v1.train.Scaffold(saver=tf.train.Checkpoint(w=variables["w"], step=variables["global_step"]))

    est = _estimator_class()(make_model_fn(scaffold_fn=scaffold), model_dir=str(tmp_path))
    est.train(input_fn, steps=3)
    w = tf.Variable(tf.zeros([2, 1]))
    step = tf.Variable(0, dtype=tf.int64)
    tf.train.Checkpoint(w=w, step=step).restore(tf.train.latest_checkpoint(str(tmp_path))).expect_partial()
    assert int(step.numpy()) == 3
    assert not np.allclose(w.numpy(), 0.5)  # trained values, read back object-based
    assert est.evaluate(input_fn, steps=1)["global_step"] == 3  # evaluation restores through the same saver


def test_scaffold_init_op_and_local_init_op_replace_the_defaults(tmp_path):
    def scaffold():
        w = [v for v in v1.global_variables() if v.op.name == "w"][0]
        counter = v1.get_local_variable("inits", initializer=0.0)
        with tf.control_dependencies([v1.global_variables_initializer()]):
            init_op = w.assign([[1.0], [-1.0]]).op
        return v1.train.Scaffold(init_op=init_op,
                                 local_init_op=tf.group(counter.initializer, v1.tables_initializer()))

    est = _estimator_class()(make_model_fn(scaffold_fn=scaffold), model_dir=str(tmp_path),
                             config=RunConfig(save_checkpoints_steps=1))
    est.train(input_fn, steps=1)
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path / "model.ckpt-0"), "w"), [[1.0], [-1.0]])


def test_scaffold_init_fn_loads_pretrained_weights_and_ready_op_is_checked(tmp_path):
    loaded = []

    def scaffold():
        w = [v for v in v1.global_variables() if v.op.name == "w"][0]
        value = v1.placeholder(tf.float32, [2, 1])
        assign = w.assign(value)

        def init_fn(scaffold, session):
            session.run(assign, {value: [[2.0], [3.0]]})
            loaded.append(True)
        return v1.train.Scaffold(init_fn=init_fn)

    est = _estimator_class()(make_model_fn(scaffold_fn=scaffold), model_dir=str(tmp_path / "a"),
                             config=RunConfig(save_checkpoints_steps=1))
    est.train(input_fn, steps=1)
    assert loaded == [True]
    assert est.get_variable_value("w") == pytest.approx(np.array([[2.0], [3.0]]), abs=0.5)
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path / "a" / "model.ckpt-0"), "w"), [[2.0], [3.0]])
    est.train(input_fn, steps=1)  # restored from the checkpoint: init_fn is not run again
    assert loaded == [True]

    def never_ready():
        return v1.train.Scaffold(ready_op=tf.constant(["w"]))

    est = _estimator_class()(make_model_fn(scaffold_fn=never_ready), model_dir=str(tmp_path / "b"))
    with pytest.raises(RuntimeError, match="ready_op reports"):
        est.train(input_fn, steps=1)


def test_nan_error_is_tensorflows_class(tmp_path):
    est = _estimator_class()(make_model_fn(nan=True), model_dir=str(tmp_path))
    with pytest.raises(v1.train.NanLossDuringTrainingError):
        est.train(input_fn, steps=2)


def test_a_checkpoint_is_written_at_the_start_of_training(tmp_path):
    seen = []

    class Listener(v1.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            seen.append(global_step_value)

    est = _estimator_class()(make_model_fn(), model_dir=str(tmp_path), config=RunConfig(save_checkpoints_steps=3))
    est.train(input_fn, steps=4, saving_listeners=[Listener()])
    assert seen == [0, 3, 4]  # TF 2.15's Estimator calls the listener at 0, 3 and 4 too
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path / "model.ckpt-0"), "w"), [[0.5], [0.5]])


def test_restoring_a_checkpoint_of_another_shape_names_the_variable(tmp_path):
    _estimator_class()(make_model_fn(width=1), model_dir=str(tmp_path)).train(input_fn, steps=1)
    wider = _estimator_class()(make_model_fn(width=3), model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"variable 'w' has shape \[2, 1\] in the checkpoint but \[2, 3\]"):
        wider.train(input_fn, steps=1)


def test_device_fn_places_the_models_ops(tmp_path):
    placed = []

    def device_fn(op):
        placed.append(op.name)
        return "/device:CPU:0"

    with pytest.raises(ValueError, match='device_fn must be callable with exactly one argument "op"'):
        RunConfig(device_fn=lambda operation, extra: "")
    config = RunConfig(device_fn=device_fn)
    assert config.device_fn is device_fn
    _estimator_class()(make_model_fn(), model_dir=str(tmp_path), config=config).train(input_fn, steps=1)
    assert "w" in placed and any(name.startswith("gradients") for name in placed)


def test_train_and_evaluate_argument_wording(tmp_path):
    est = _estimator_class()(make_model_fn(), model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        est.train(input_fn, steps=0)
    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        est.train(input_fn, max_steps=-1)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(input_fn, steps=1, max_steps=2)
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook, given: 'not a hook'"):
        est.train(input_fn, steps=1, hooks=["not a hook"])
    from npurun.estimator import EvalSpec, TrainSpec

    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        TrainSpec(input_fn, max_steps=0)
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        EvalSpec(input_fn, steps=0)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0"):
        EvalSpec(input_fn, throttle_secs=-1)
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        TrainSpec("input_fn")
    with pytest.raises(TypeError, match="All hooks must be `SessionRunHook` instances"):
        EvalSpec(input_fn, hooks=[object()])


@pytest.mark.parametrize("arguments, message", [
    (dict(model_dir=""), "model_dir should be non-empty"),
    (dict(save_summary_steps=-1), "save_summary_steps should be >= 0"),
    (dict(keep_checkpoint_max=-1), "keep_checkpoint_max should be >= 0"),
    (dict(keep_checkpoint_every_n_hours=0), "keep_checkpoint_every_n_hours should be > 0"),
    (dict(log_step_count_steps=0), "log_step_count_steps should be > 0"),
    (dict(tf_random_seed=1.5), "tf_random_seed must be integer"),
    (dict(session_config=1), "session_config must be instance of ConfigProto"),
])
def test_run_config_rejects_with_tf_estimators_wording(arguments, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**arguments)


def test_model_fn_with_an_unexpected_argument_is_named():
    def model_fn(features, labels, mode, extra):
        raise AssertionError("not called")

    with pytest.raises(ValueError, match=r"has following not expected args: \['extra'\]"):
        _estimator_class()(model_fn)


def test_an_evaluator_task_is_not_part_of_the_training_cluster(monkeypatch):
    cluster = {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}))
    worker = RunConfig()
    assert (worker.master, worker.num_worker_replicas, worker.global_id_in_cluster) == ("grpc://host2:2222", 3, 2)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}}))
    evaluator = RunConfig()  # TF 2.15's RunConfig gives the same values
    assert evaluator.cluster_spec == tf.train.ClusterSpec({})
    assert (evaluator.master, evaluator.evaluation_master, evaluator.num_worker_replicas,
            evaluator.global_id_in_cluster, evaluator.is_chief) == ("", "", 0, None, False)


def test_replace_rejects_unknown_arguments():
    with pytest.raises(ValueError, match="Replacing no_such_thing is not supported"):
        RunConfig().replace(no_such_thing=1)


def test_train_and_evaluate_checks_its_arguments():
    from npurun.estimator import EvalSpec, TrainSpec, train_and_evaluate

    with pytest.raises(TypeError, match="`estimator` must have type `tf.estimator.Estimator`"):
        train_and_evaluate(object(), TrainSpec(input_fn), EvalSpec(input_fn))
    with pytest.raises(TypeError, match="`eval_spec` must have type `tf.estimator.EvalSpec`"):
        train_and_evaluate(object(), TrainSpec(input_fn), "eval")


def test_listeners_and_predict_hooks_are_checked(tmp_path):
    est = _estimator_class()(make_model_fn(), model_dir=str(tmp_path))
    with pytest.raises(TypeError, match="saving_listeners must be a list of CheckpointSaverListener"):
        est.train(input_fn, steps=1, saving_listeners=[CountRuns()])
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook, given: 3"):
        next(est.predict(input_fn, hooks=[3]))


def test_predict_without_a_checkpoint_runs_the_scaffold_init_fn(tmp_path):
    def model_fn(features, labels, mode):
        from npurun.estimator import EstimatorSpec

        w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
        value = v1.placeholder(tf.float32, [2, 1])
        assign = w.assign(value)
        scaffold = v1.train.Scaffold(init_fn=lambda scaffold, session: session.run(assign, {value: [[1.0], [2.0]]}))
        return EstimatorSpec(mode, predictions=tf.matmul(features["x"], w), scaffold=scaffold)

    est = _estimator_class()(model_fn, model_dir=str(tmp_path))
    predictions = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X}).batch(4)))
    np.testing.assert_allclose(np.ravel(predictions), X @ np.array([1.0, 2.0], dtype="float32"), rtol=1e-6)
