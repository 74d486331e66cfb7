"""Constructor and call rules of NPUEstimator: model_dir, config type, graph_run_mode, signatures."""
import logging
import os
import re

import pytest
import tensorflow as tf

from estimator_helpers import input_fn_for, linear_logits, make_data, model_fn
from npurun.estimator import EstimatorSpec, ModeKeys, NPUEstimator, NPUEstimatorSpec

v1 = tf.compat.v1
X, Y = make_data()


# ---- model_dir -------------------------------------------------------------------------------------
def test_model_dir_from_estimator_or_config(make_config, tmp_path):
    assert NPUEstimator(model_fn, model_dir=str(tmp_path / "a"), config=make_config()).model_dir == str(tmp_path / "a")
    assert NPUEstimator(model_fn, config=make_config(model_dir=str(tmp_path / "b"))).model_dir == str(tmp_path / "b")
    same = str(tmp_path / "c")
    assert NPUEstimator(model_fn, model_dir=same, config=make_config(model_dir=same)).model_dir == same


def test_model_dir_conflict_is_a_value_error(make_config, tmp_path):
    with pytest.raises(ValueError, match="model_dir"):
        NPUEstimator(model_fn, model_dir=str(tmp_path / "a"), config=make_config(model_dir=str(tmp_path / "b")))


def test_model_dir_created_when_neither_sets_it(make_config, tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="npurun"):
        first = NPUEstimator(model_fn, config=make_config()).model_dir
        second = NPUEstimator(model_fn, config=make_config()).model_dir
    for path in (first, second):
        name = os.path.basename(path)
        assert os.path.dirname(path) == str(tmp_path) and os.path.isdir(path)
        assert re.fullmatch(r"model_dir_[A-Za-z0-9]{10}", name)
        assert len(set(name[len("model_dir_"):])) == 10  # distinct characters
        assert any(path in record.getMessage() for record in caplog.records)
    assert first != second


# ---- config and constructor arguments --------------------------------------------------------------
@pytest.mark.parametrize("bad", [{"model_dir": "x"}, "config", 3])
def test_config_must_be_an_npurunconfig(bad, model_dir):
    with pytest.raises(ValueError, match="NPURunConfig"):
        NPUEstimator(model_fn, model_dir=model_dir, config=bad)


def test_config_none_means_defaults(model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir)
    assert est.config.save_checkpoints_steps == 100 and est.config.iterations_per_loop == 1


def test_model_fn_with_unknown_argument_is_rejected(make_config, model_dir):
    def bad_model_fn(features, labels, mode, hparams):
        pass
    with pytest.raises(ValueError, match="hparams"):
        NPUEstimator(bad_model_fn, model_dir=model_dir, config=make_config())


def test_graph_run_mode_0_rejects_train_but_allows_inference(make_config, model_dir):
    NPUEstimator(model_fn, model_dir=model_dir, config=make_config()).train(input_fn_for(X, Y), steps=2)
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(graph_run_mode=0))
    with pytest.raises(ValueError, match="graph_run_mode=0"):
        est.train(input_fn_for(X, Y), steps=1)
    assert est.evaluate(input_fn_for(X, Y, repeat=False))["global_step"] == 2
    assert len(list(est.predict(input_fn_for(X[:5], repeat=False)))) == 5


# ---- model_fn and input_fn argument subsets ---------------------------------------------------------
def _spec(features, labels, mode):
    logits = linear_logits(features["x"])
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return EstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step()))


def test_model_fn_argument_subsets(make_config, model_dir):
    seen = {}

    def fn_all(features, labels, mode, params, config):
        seen["all"] = (mode, params["k"], config.save_checkpoints_steps)
        return _spec(features, labels, mode)

    def fn_reordered(labels, features, mode):
        seen["reordered"] = mode
        return _spec(features, labels, mode)

    def fn_keyword_only(features, labels, *, params):
        seen["kwonly"] = params["k"]
        return _spec(features, labels, ModeKeys.TRAIN)

    # params only for the functions that take them: tf.estimator refuses params a model_fn would lose
    for name, fn, params in (("all", fn_all, {"k": 5}), ("reordered", fn_reordered, None),
                             ("kwonly", fn_keyword_only, {"k": 5})):
        est = NPUEstimator(fn, model_dir=os.path.join(model_dir, name), config=make_config(save_checkpoints_steps=7),
                           params=params)
        est.train(input_fn_for(X, Y), steps=2)
        assert est.get_variable_value("global_step") == 2
    assert seen == {"all": ("train", 5, 7), "reordered": "train", "kwonly": 5}


def test_model_fn_without_labels_rejects_labelled_input(make_config, model_dir):
    def features_only(features, mode):
        return _spec(features, tf.zeros([tf.shape(features["x"])[0]], tf.int32), mode)
    est = NPUEstimator(features_only, model_dir=model_dir, config=make_config())
    with pytest.raises(ValueError, match="labels"):
        est.train(input_fn_for(X, Y), steps=1)


def test_input_fn_argument_subsets_and_tuple_results(make_config, model_dir):
    seen = []

    def with_args(params, mode, config):
        seen.append((params["k"], mode, config.iterations_per_loop))
        return input_fn_for(X, Y)()

    def tensors_tuple():
        dataset = input_fn_for(X, Y)()
        return v1.data.make_one_shot_iterator(dataset).get_next()

    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(), params={"k": 1})
    est.train(with_args, steps=2)
    est.train(tensors_tuple, steps=2)
    assert seen == [(1, "train", 1)]
    assert est.get_variable_value("global_step") == 4


def test_model_fn_must_return_a_spec_of_its_mode(make_config, model_dir):
    est = NPUEstimator(lambda features, labels, mode: _spec(features, labels, ModeKeys.TRAIN),
                       model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y), steps=1)
    with pytest.raises(ValueError, match="mode"):
        est.evaluate(input_fn_for(X, Y, repeat=False))
    bad = NPUEstimator(lambda features: {"not": "a spec"}, model_dir=model_dir + "2", config=make_config())
    with pytest.raises(TypeError, match="EstimatorSpec"):
        bad.train(input_fn_for(X), steps=1)


# ---- steps and max_steps -----------------------------------------------------------------------------
def test_steps_and_max_steps(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
    with pytest.raises(ValueError, match="not both"):
        est.train(input_fn_for(X, Y), steps=1, max_steps=3)
    with pytest.raises(ValueError, match="steps"):
        est.train(input_fn_for(X, Y), steps=0)
    est.train(input_fn_for(X, Y), steps=3)
    assert est.get_variable_value("global_step") == 3
    est.train(input_fn_for(X, Y), steps=2)  # steps are added to where training is
    assert est.get_variable_value("global_step") == 5
    est.train(input_fn_for(X, Y), max_steps=8)  # max_steps is a total
    assert est.get_variable_value("global_step") == 8
    before = est.get_variable_value("linear/w")
    est.train(input_fn_for(X, Y), max_steps=6)  # already past: nothing happens
    assert est.get_variable_value("global_step") == 8
    assert (est.get_variable_value("linear/w") == before).all()


def test_training_stops_when_a_finite_input_ends(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X[:40], Y[:40], batch=8, repeat=False), steps=100)
    assert est.get_variable_value("global_step") == 5  # 40 examples / batch 8
    assert est.latest_checkpoint().endswith("model.ckpt-5")
    # A new train() call reads its input from the start again (as tf.estimator did).
    est.train(input_fn_for(X[:40], Y[:40], batch=8, repeat=False), steps=100)
    assert est.get_variable_value("global_step") == 10


def test_variable_accessors(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
    with pytest.raises(ValueError, match="checkpoint"):
        est.get_variable_names()
    assert est.latest_checkpoint() is None
    est.train(input_fn_for(X, Y), steps=2)
    assert {"global_step", "linear/w", "linear/b"} <= set(est.get_variable_names())
    assert est.get_variable_value("linear/w").shape == (4, 3)


# ---- specs ------------------------------------------------------------------------------------------------
def test_spec_rules():
    with pytest.raises(ValueError, match="mode"):
        EstimatorSpec("training", loss=tf.constant(1.0))
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="train_op"):
            EstimatorSpec(ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="predictions"):
            EstimatorSpec(ModeKeys.PREDICT)
        with pytest.raises(TypeError, match="pair"):
            EstimatorSpec(ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": loss})
        with pytest.raises(TypeError, match="SessionRunHook"):
            EstimatorSpec(ModeKeys.EVAL, loss=loss, evaluation_hooks=[object()])
        with pytest.raises(TypeError, match="host_call"):
            NPUEstimatorSpec(ModeKeys.EVAL, loss=loss, host_call=(1, [loss]))
        spec = NPUEstimatorSpec(ModeKeys.EVAL, loss=loss, host_call=(lambda l: None, [loss]))
        assert spec.host_call[1] == [loss] and EstimatorSpec(ModeKeys.EVAL, loss=loss).host_call is None
        assert ModeKeys.TRAIN == "train" and ModeKeys.EVAL == "eval" and ModeKeys.PREDICT == "infer"
