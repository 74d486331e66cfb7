"""tf.estimator conformance: export receivers and outputs, exporters in train_and_evaluate, early stopping,
InMemoryEvaluatorHook, call_logit_fn."""
import os

import numpy as np
import pytest
import tensorflow as tf

from npurun.estimator import (EstimatorSpec, EvalSpec, ModeKeys, NPUEstimator, TrainSpec, experimental, export,
                              exporters, train_and_evaluate)

v1 = tf.compat.v1
X = np.arange(16, dtype="float32").reshape(8, 2) / 16.0
Y = np.array([0, 1, 0, 1, 1, 0, 1, 1], dtype="float32")


def input_fn(repeat=True):
    def fn():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
        return (dataset.repeat() if repeat else dataset).batch(4)
    return fn


def model_fn(features, labels, mode, params):
    x = features["x"] if isinstance(features, dict) else features
    w = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer(0.3))
    logits = tf.reshape(tf.matmul(tf.reshape(x, [-1, 2]), w), [-1])
    if mode == ModeKeys.PREDICT:
        probability = tf.sigmoid(logits)
        outputs = None
        if params.get("classify"):
            outputs = {"serving_default": export.ClassificationOutput(scores=tf.stack([1 - probability, probability],
                                                                                      axis=1)),
                       "predict": export.PredictOutput({"logits": logits})}
        return EstimatorSpec(mode, predictions={"logits": logits}, export_outputs=outputs)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    op = v1.train.GradientDescentOptimizer(params.get("lr", 0.5)).minimize(loss, v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=op)


@pytest.fixture
def est(make_config, model_dir):
    return NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=2))


def _serve(path, **inputs):
    return {k: v.numpy() for k, v in tf.saved_model.load(path).signatures["serving_default"](**inputs).items()}


# ---- receivers and outputs ----------------------------------------------------------------------------
def test_export_accepts_bytes_base_and_wraps_a_single_feature(est, tmp_path):
    est.train(input_fn(), steps=2)
    seen = {}

    def receiver_fn():
        x = v1.placeholder(tf.float32, [None, 2], name="x")
        receiver = export.ServingInputReceiver(features=x, receiver_tensors={"x": x})
        seen["features"] = receiver.features
        return receiver

    with pytest.raises(KeyError):  # model_fn gets {'feature': x}, as in tf.estimator, and reads features["x"]
        est.export_saved_model(os.fsencode(str(tmp_path / "a")), receiver_fn)
    assert list(seen["features"]) == ["feature"]

    def tensor_receiver_fn():
        x = v1.placeholder(tf.float32, [None, 2], name="x")
        return export.TensorServingInputReceiver(features=x, receiver_tensors={"x": x})

    path = est.export_saved_model(os.fsencode(str(tmp_path / "b")), tensor_receiver_fn)
    assert os.path.dirname(path) == str(tmp_path / "b")
    served = _serve(path, x=tf.constant(X))
    np.testing.assert_allclose(served["logits"], [p["logits"] for p in est.predict(input_fn(repeat=False))],
                               rtol=1e-6)


def test_raw_receiver_keeps_unknown_rank():
    with tf.Graph().as_default():
        unknown = v1.placeholder(tf.float32, None)
        with tf.Graph().as_default():
            receiver = export.build_raw_serving_input_receiver_fn({"a": unknown, "b": tf.zeros([3, 2])},
                                                                  default_batch_size=5)()
            assert receiver.receiver_tensors["a"].shape.rank is None
            assert receiver.receiver_tensors["b"].shape.as_list() == [5, 2]
            supervised = experimental.build_raw_supervised_input_receiver_fn(
                {"x": tf.zeros([1, 2])}, tf.zeros([1]))()
            assert sorted(supervised.receiver_tensors) == ["label", "x"]
            assert supervised.labels.shape.as_list() == [None]


def test_classification_output_serves_the_classify_signature(make_config, model_dir, tmp_path):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(), params={"classify": True})
    est.train(input_fn(), steps=1)
    spec = {"x": tf.io.FixedLenFeature([2], tf.float32)}
    path = est.export_saved_model(str(tmp_path), export.build_parsing_serving_input_receiver_fn(spec))
    loaded = tf.saved_model.load(path)
    assert set(loaded.signatures) == {"serving_default", "predict"}
    examples = [tf.train.Example(features=tf.train.Features(feature={"x": tf.train.Feature(
        float_list=tf.train.FloatList(value=row))})).SerializeToString() for row in X]
    scores = loaded.signatures["serving_default"](inputs=tf.constant(examples))["scores"].numpy()
    logits = np.array([p["logits"] for p in est.predict(input_fn(repeat=False))])
    np.testing.assert_allclose(scores[:, 1], 1 / (1 + np.exp(-logits)), rtol=1e-5)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="single tensor input of type tf.string"):
            export.RegressionOutput(tf.zeros([2])).as_signature_def({"a": tf.zeros([2]), "b": tf.zeros([2])})


# ---- exporters -------------------------------------------------------------------------------------
def _receiver():
    x = v1.placeholder(tf.float32, [None, 2], name="x")
    return export.ServingInputReceiver({"x": x}, {"x": x})


def test_exporters_run_after_evaluations(est):
    latest = exporters.LatestExporter("latest", _receiver, exports_to_keep=2)
    final = exporters.FinalExporter("final", _receiver)
    result, exported = train_and_evaluate(est, TrainSpec(input_fn(), max_steps=6),
                                          EvalSpec(input_fn(False), steps=None, exporters=[latest, final],
                                                   throttle_secs=0))
    assert result["global_step"] == 6
    # Evaluations after the checkpoints at 2, 4, 6 (not at the start's 0): 3 latest exports, 2 kept; 1 final.
    # The result holds the last evaluation's exports (TF 2.15's Estimator gives the same).
    assert [e is not None for e in exported] == [True, True]
    assert len(os.listdir(os.path.join(est.model_dir, "export", "latest"))) == 2
    assert len(os.listdir(os.path.join(est.model_dir, "export", "final"))) == 1


def test_best_exporter_exports_only_improvements(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=1),
                       params={"lr": -0.5})  # gradient ascent: the loss only grows after the first evaluation
    best = exporters.BestExporter(serving_input_receiver_fn=_receiver, exports_to_keep=None)
    _, exported = train_and_evaluate(est, TrainSpec(input_fn(), max_steps=3),
                                     EvalSpec(input_fn(False), steps=None, exporters=best, throttle_secs=0))
    assert exported == [None]  # the last evaluation was not the best (TF 2.15's Estimator agrees)
    assert len(os.listdir(os.path.join(est.model_dir, "export", "best_exporter"))) == 1
    with pytest.raises(ValueError, match="must include best_eval_result"):
        exporters.BestExporter(serving_input_receiver_fn=_receiver, compare_fn=lambda a, current_eval_result: True)
    with pytest.raises(ValueError, match="unique names"):
        EvalSpec(input_fn(), exporters=[exporters.FinalExporter("x", _receiver), exporters.FinalExporter("x", _receiver)])


# ---- early stopping and in-memory evaluation -----------------------------------------------------------
def _write_eval(est, values):
    with tf.Graph().as_default():
        writer = v1.summary.FileWriter(est.eval_dir())
    for step, value in values:
        writer.add_summary(v1.Summary(value=[v1.Summary.Value(tag="loss", simple_value=value)]), step)
    writer.close()


def test_stop_if_higher_hook_stops_training(est):
    est.train(input_fn(), steps=2)
    loss = est.evaluate(input_fn(False))["loss"]
    hook = experimental.stop_if_higher_hook(est, "loss", loss - 1e-3, run_every_secs=None, run_every_steps=1)
    est.train(input_fn(), steps=10, hooks=[hook])
    assert est.get_variable_value("global_step") == 3  # stopped after its first run
    not_yet = experimental.stop_if_lower_hook(est, "loss", -1.0, run_every_secs=None, run_every_steps=1)
    est.train(input_fn(), steps=2, hooks=[not_yet])
    assert est.get_variable_value("global_step") == 5


def test_stop_if_no_decrease_counts_steps_since_the_best(est):
    _write_eval(est, [(10, 1.0), (20, 0.5), (30, 0.6), (40, 0.7)])
    patient = experimental.stop_if_no_decrease_hook(est, "loss", 25, run_every_secs=None, run_every_steps=1)
    est.train(input_fn(), steps=2, hooks=[patient])
    assert est.get_variable_value("global_step") == 2  # 40 - 20 < 25: no stop
    impatient = experimental.stop_if_no_decrease_hook(est, "loss", 20, run_every_secs=None, run_every_steps=1)
    est.train(input_fn(), steps=4, hooks=[impatient])
    assert est.get_variable_value("global_step") == 3
    with pytest.raises(ValueError, match="Only one of run_every_secs and run_every_steps"):
        experimental.make_early_stopping_hook(est, lambda: False, run_every_secs=1, run_every_steps=1)


def test_in_memory_evaluator_evaluates_at_start_every_n_and_end(est):
    hook = experimental.InMemoryEvaluatorHook(est, input_fn(False), every_n_iter=2, name="mem")
    est.train(input_fn(), steps=4, hooks=[hook])
    assert [r["global_step"] for r in hook.results] == [0, 2, 4, 4]
    assert hook.results[-1]["loss"] == pytest.approx(est.evaluate(input_fn(False))["loss"], rel=1e-6)
    assert hook.results[0]["loss"] > hook.results[-1]["loss"]
    assert experimental.read_eval_metrics(est.eval_dir("mem"))[2]["loss"] == pytest.approx(hook.results[1]["loss"])
    with pytest.raises(ValueError, match="invalid every_n_iter"):
        experimental.InMemoryEvaluatorHook(est, input_fn(), every_n_iter=0)


def test_call_logit_fn_passes_what_it_names():
    with tf.Graph().as_default():
        features = {"x": tf.ones([2, 3])}
        logits = experimental.call_logit_fn(lambda features, mode: tf.reduce_sum(features["x"], 1) + len(mode),
                                            features, ModeKeys.TRAIN, {}, None)
        assert logits.shape.as_list() == [2]
        with pytest.raises(ValueError, match="should return a Tensor"):
            experimental.call_logit_fn(lambda features: "logits", features, ModeKeys.TRAIN, {}, None)


def test_signatures_the_receiver_cannot_feed_are_left_out(make_config, model_dir, tmp_path, caplog):
    import logging

    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(), params={"classify": True})
    est.train(input_fn(), steps=1)
    with caplog.at_level(logging.WARNING, logger="npurun"):
        path = est.export_saved_model(str(tmp_path), _receiver)  # float placeholders: no Classify API
    assert set(tf.saved_model.load(path).signatures) == {"predict"}  # TF 2.15's Estimator keeps the same one
    assert any("'serving_default' is left out" in r.getMessage() for r in caplog.records)
