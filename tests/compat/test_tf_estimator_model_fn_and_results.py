"""tf.estimator conformance: model_fn rules, train()'s refusals and what evaluate() writes, as the
classic Estimator (TensorFlow 2.15's) does them; a behaviour each."""
import functools
import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from npurun.tf_estimator import RunConfig
from .conftest import estimator_class as _estimator_class

v1 = tf.compat.v1


pytestmark = pytest.mark.usefixtures("single_process")


def _spec(**fields):
    from npurun.estimator import EstimatorSpec

    return EstimatorSpec(**fields)


def _input_fn():
    return {"x": tf.constant([[1.0], [2.0]])}, tf.constant([[1.0], [1.0]])


def _counting_model_fn(features, labels, mode):
    return _spec(mode=mode, loss=tf.constant(1.0), train_op=v1.assign_add(v1.train.get_global_step(), 1))


def test_a_subclass_may_add_methods_but_not_override_public_ones(tmp_path):
    Estimator = _estimator_class()

    class Adds(Estimator):
        def predict_proba(self):
            return "added"

    class Overrides(Estimator):
        def predict(self, input_fn, predict_keys=None, hooks=None):
            return None

    assert Adds(_counting_model_fn, str(tmp_path / "a")).predict_proba() == "added"
    with pytest.raises(ValueError, match=r"cannot override members of Estimator.*predict"):
        Overrides(_counting_model_fn, str(tmp_path / "b"))


def test_model_fn_is_required_and_params_need_a_params_argument(tmp_path):
    Estimator = _estimator_class()
    with pytest.raises(ValueError, match="model_fn must be provided"):
        Estimator(model_fn=None)

    class CallableModelFn:
        def __call__(self, features, labels):
            return None

    for model_fn in (lambda features, labels: None, CallableModelFn()):
        with pytest.raises(ValueError, match="does not include params"):
            Estimator(model_fn, str(tmp_path), params={"a": 1})


def test_arguments_a_partial_binds_are_not_model_fn_arguments(tmp_path):
    seen = {}

    def model_fn(features, labels, mode, foo, bar):
        seen.update(foo=foo, bar=bar)
        return _counting_model_fn(features, labels, mode)

    estimator = _estimator_class()(functools.partial(model_fn, foo=45.0, bar=46.0), str(tmp_path))
    estimator.train(_input_fn, steps=1)
    assert seen == {"foo": 45.0, "bar": 46.0}
    assert estimator.get_variable_value("global_step") == 1


def test_model_fn_property_is_bound_to_params_with_a_fixed_signature(tmp_path):
    import inspect

    seen = {}

    def model_fn(features, labels, mode, params, config):
        seen.update(params=params, config=config, mode=mode)
        return _counting_model_fn(features, labels, mode)

    estimator = _estimator_class()(model_fn, str(tmp_path), params={"k": 3})
    public = estimator.model_fn
    assert list(inspect.signature(public).parameters) == ["features", "labels", "mode", "config"]
    config = RunConfig(tf_random_seed=7)
    with tf.Graph().as_default():
        v1.train.create_global_step()
        spec = public({"x": tf.constant([[1.0]])}, tf.constant([[1.0]]), "train", config)
    assert spec.mode == "train" and seen == {"params": {"k": 3}, "config": config, "mode": "train"}


def test_a_spec_without_mode_and_a_non_spec_result(tmp_path):
    def no_mode(features):
        return _spec(mode=None, loss=tf.constant(0.0), train_op=v1.assign_add(v1.train.get_global_step(), 1))

    estimator = _estimator_class()(no_mode, str(tmp_path / "a"))
    estimator.train(lambda: {"x": tf.constant([[1.0]])}, steps=2)
    assert estimator.get_variable_value("global_step") == 2

    bad = _estimator_class()(lambda features, labels: "NotGoodNotGood", str(tmp_path / "b"))
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        bad.train(_input_fn, steps=1)


def test_empty_model_dir_is_not_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    estimator = _estimator_class()(_counting_model_fn, model_dir="")
    assert estimator.model_dir and os.path.isdir(os.path.dirname(os.path.abspath(estimator.model_dir)))
    assert estimator.config.model_dir == estimator.model_dir


def test_saving_listeners_need_something_that_saves(tmp_path):
    listener = v1.train.CheckpointSaverListener()
    config = RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
    estimator = _estimator_class()(_counting_model_fn, str(tmp_path), config=config)
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook to use saving_listeners"):
        estimator.train(_input_fn, steps=1, saving_listeners=[listener])
    assert not glob.glob(str(tmp_path / "*.index"))  # refused before training


def test_train_refuses_an_evaluator_task(tmp_path):
    class EvaluatorConfig(RunConfig):
        @property
        def task_type(self):
            return "evaluator"

    estimator = _estimator_class()(_counting_model_fn, str(tmp_path), config=EvaluatorConfig())
    with pytest.raises(ValueError, match="train_and_evaluate"):
        estimator.train(_input_fn, steps=1)


def test_a_metric_named_global_step_is_refused(tmp_path):
    def model_fn(features, labels, mode):
        return _spec(mode=mode, loss=tf.constant(1.0), train_op=v1.assign_add(v1.train.get_global_step(), 1),
                     eval_metric_ops={"global_step": v1.metrics.mean(tf.constant(2.0))})

    estimator = _estimator_class()(model_fn, str(tmp_path))
    estimator.train(_input_fn, steps=1)
    with pytest.raises(ValueError, match="Metric with name `global_step` is not allowed"):
        estimator.evaluate(_input_fn, steps=1)


def _eval_values(eval_dir):
    values = {}
    for path in glob.glob(os.path.join(eval_dir, "events.out.tfevents.*")):
        for event in v1.train.summary_iterator(path):
            for value in event.summary.value:
                values[value.tag] = (event.step, value)
    return values


def test_evaluation_results_of_every_kind_are_written_as_tf_estimator_writes_them(tmp_path):
    def model_fn(features, labels, mode):
        image = v1.summary.image("image", tf.zeros([5, 3, 3, 1]), max_outputs=3)
        metrics = {
            "mean": v1.metrics.mean(tf.constant(2.0)),
            "tensor": v1.metrics.mean_tensor(tf.constant([1.0, 0.5, 0.0])),
            "image": (image, tf.no_op()),
            "nested": (((tf.constant(2.0), tf.constant(1)), tf.constant(3.0, tf.float64)), tf.no_op()),
        }
        return _spec(mode=mode, loss=tf.constant(1.0), train_op=v1.assign_add(v1.train.get_global_step(), 1),
                     eval_metric_ops=metrics)

    estimator = _estimator_class()(model_fn, str(tmp_path))
    estimator.train(_input_fn, steps=3)
    result = estimator.evaluate(_input_fn, steps=1)
    ((two, one), three) = result["nested"]  # a nested metric value is returned as it is
    assert (two, one, three) == (2.0, 1, 3.0)
    values = _eval_values(estimator.eval_dir())
    assert values["mean"][0] == 3 and values["mean"][1].simple_value == 2.0
    assert tf.make_ndarray(values["tensor"][1].tensor).tolist() == [1.0, 0.5, 0.0]
    assert {"image/0", "image/1", "image/2"} <= set(values)  # a Summary proto's values, tagged key/i
    assert values["image/0"][1].HasField("image")
    step, path_value = values["checkpoint_path"]
    assert step == 3 and tf.make_ndarray(path_value.tensor).item().decode() == estimator.latest_checkpoint()
    assert "nested" not in values


def test_spec_replace_keeps_the_mode_and_checks_again_and_scaffold_defaults():
    from npurun.estimator import ModeKeys

    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        spec = _spec(mode=ModeKeys.EVAL, loss=loss)
        assert isinstance(spec.scaffold, v1.train.Scaffold) and spec.scaffold.saver is None
        assert spec._replace(loss=tf.constant(2.0)).loss is not loss
        with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed"):
            spec._replace(mode=ModeKeys.TRAIN)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            spec._replace(loss=tf.constant([1.0, 2.0]))


def test_a_keras_metric_without_update_state_is_named_first():
    import tf_keras

    from npurun.estimator import ModeKeys

    with tf.Graph().as_default():
        metric = tf_keras.metrics.Mean()  # made in another graph and never updated
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match=r"Please call update_state\(\.\.\.\)"):
            _spec(mode=ModeKeys.EVAL, loss=loss, eval_metric_ops={"mean": metric})


def _linear_model_fn(features, labels, mode):
    w = v1.get_variable("w", [1, 1], initializer=v1.zeros_initializer())
    predictions = tf.matmul(features["x"], w)
    if mode == "infer":
        return _spec(mode=mode, predictions={"y": predictions})
    loss = tf.reduce_mean(tf.square(predictions - labels))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, v1.train.get_global_step())
    return _spec(mode=mode, loss=loss, train_op=train_op)


def test_an_evaluator_task_evaluates_the_checkpoints_others_write(tmp_path, monkeypatch):
    import json

    model_dir = str(tmp_path / "model")
    trainer = _estimator_class()(_linear_model_fn, model_dir, config=RunConfig(save_checkpoints_steps=2))
    trainer.train(_input_fn, max_steps=4)  # what the chief wrote

    cluster = {"chief": ["host0:2222"], "worker": ["host1:2222"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}}))
    evaluator = _estimator_class()(_linear_model_fn, model_dir, config=RunConfig())
    from npurun.estimator import EvalSpec, TrainSpec, exporters, train_and_evaluate

    final = exporters.FinalExporter("final", _receiver_fn())
    result, exports = train_and_evaluate(evaluator, TrainSpec(_input_fn, max_steps=4),
                                         EvalSpec(_input_fn, steps=1, exporters=[final], start_delay_secs=0,
                                                  throttle_secs=0))
    assert result["global_step"] == 4 and trainer.get_variable_value("global_step") == 4  # nothing trained
    assert len(exports) == 1 and os.path.isdir(os.fsdecode(exports[0]))
    from npurun.estimator.early_stopping import read_eval_metrics

    assert 4 in read_eval_metrics(evaluator.eval_dir())  # the evaluator writes the evaluation events

    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 1}}))
    second = _estimator_class()(_linear_model_fn, model_dir, config=RunConfig())
    with pytest.raises(ValueError, match="there can only be one `evaluator` task"):
        train_and_evaluate(second, TrainSpec(_input_fn, max_steps=4), EvalSpec(_input_fn))


def _receiver_fn():
    from npurun.estimator import export

    def receiver():
        x = v1.placeholder(tf.float32, [None, 1], name="x")
        return export.ServingInputReceiver({"x": x}, {"x": x})
    return receiver


def test_a_subclass_may_override_model_fn_latest_checkpoint_and_npuruns_own_members(tmp_path):
    Estimator = _estimator_class()

    class Allowed(Estimator):
        @property
        def model_fn(self):
            return super().model_fn

        def latest_checkpoint(self):
            return super().latest_checkpoint()

        def call_model_fn(self, features, labels, mode):
            return super().call_model_fn(features, labels, mode)

    estimator = Allowed(_counting_model_fn, str(tmp_path))
    estimator.train(_input_fn, steps=1)
    assert estimator.latest_checkpoint().endswith("-1")
