"""evaluate() against a numpy hand computation, predict(), and the exported SavedModel."""
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from estimator_helpers import input_fn_for, make_data, model_fn, softmax
from npurun.estimator import (EstimatorSpec, ModeKeys, NPUEstimator, PredictOutput,
                              build_parsing_serving_input_receiver_fn, build_raw_serving_input_receiver_fn)

v1 = tf.compat.v1
X, Y = make_data()


@pytest.fixture
def trained(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y, shuffle=True, seed=1), steps=20)
    return est


def _numpy_logits(est, x):
    return x @ est.get_variable_value("linear/w") + est.get_variable_value("linear/b")


def _numpy_metrics(est, x, y, batch):
    logits = _numpy_logits(est, x)
    probs = softmax(logits.astype("float64"))
    per_example = -np.log(probs[np.arange(len(y)), y])
    batch_losses = [per_example[i:i + batch].mean() for i in range(0, len(y), batch)]
    return {"accuracy": np.mean(np.argmax(logits, 1) == y), "loss": np.mean(batch_losses),
            "mean_max_prob": probs.max(1).mean()}


def test_evaluate_matches_numpy(trained):
    results = trained.evaluate(input_fn_for(X, Y, batch=8, repeat=False))
    expected = _numpy_metrics(trained, X, Y, batch=8)
    assert results["global_step"] == 20
    assert set(results) == {"accuracy", "loss", "mean_max_prob", "global_step"}
    for key, value in expected.items():
        assert results[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    # `steps` limits the batches evaluated.
    partial = trained.evaluate(input_fn_for(X, Y, batch=8, repeat=False), steps=3)
    for key, value in _numpy_metrics(trained, X[:24], Y[:24], batch=8).items():
        assert partial[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


def _scalars(directory):
    found = {}
    for path in tf.io.gfile.glob(os.path.join(directory, "events.out.tfevents.*")):
        for event in v1.train.summary_iterator(path):
            for value in event.summary.value:
                found.setdefault(value.tag, []).append((event.step, value.simple_value))
    return found


def test_evaluation_summaries_go_to_eval_dirs(trained):
    default = trained.evaluate(input_fn_for(X, Y, repeat=False))
    named = trained.evaluate(input_fn_for(X[:16], Y[:16], repeat=False), name="small")
    for directory, results in ((os.path.join(trained.model_dir, "eval"), default),
                               (os.path.join(trained.model_dir, "eval_small"), named)):
        scalars = _scalars(directory)
        for key in ("accuracy", "loss"):
            assert scalars[key] == [(20, pytest.approx(float(results[key])))]


def test_evaluate_without_a_checkpoint_uses_fresh_variables(make_config, model_dir, caplog):
    # As tf.estimator (TF 2.15's Estimator does the same): a warning, then initialised variables at step 0.
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(tf_random_seed=3))
    with caplog.at_level(logging.WARNING, logger="npurun"):
        result = est.evaluate(input_fn_for(X, Y, repeat=False))
    assert result["global_step"] == 0
    assert any("Could not find trained model" in r.getMessage() for r in caplog.records)
    fresh = NPUEstimator(model_fn, model_dir=model_dir + "_b", config=make_config(tf_random_seed=3))
    assert fresh.evaluate(input_fn_for(X, Y, repeat=False))["loss"] == pytest.approx(result["loss"])


def test_evaluate_a_given_checkpoint(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=5))
    est.train(input_fn_for(X, Y), steps=10)
    older = est.evaluate(input_fn_for(X, Y, repeat=False), checkpoint_path=os.path.join(model_dir, "model.ckpt-5"))
    assert older["global_step"] == 5


def test_predict_matches_numpy(trained):
    logits = _numpy_logits(trained, X[:20])
    examples = list(trained.predict(input_fn_for(X[:20], batch=8, repeat=False)))
    assert len(examples) == 20
    np.testing.assert_allclose(np.stack([e["logits"] for e in examples]), logits, rtol=1e-5, atol=1e-5)
    assert [int(e["classes"]) for e in examples] == list(np.argmax(logits, 1))
    only = list(trained.predict(input_fn_for(X[:5], Y[:5], repeat=False), predict_keys=["classes"]))
    assert all(set(e) == {"classes"} for e in only)  # labels in the input are ignored
    batches = list(trained.predict(input_fn_for(X[:20], batch=8, repeat=False), yield_single_examples=False))
    assert [len(b["classes"]) for b in batches] == [8, 8, 4]
    with pytest.raises(ValueError, match="predict_keys"):
        list(trained.predict(input_fn_for(X[:5], repeat=False), predict_keys=["nope"]))


def test_exported_model_serves_the_same_predictions(trained, tmp_path):
    receiver = build_raw_serving_input_receiver_fn({"x": tf.TensorSpec([None, 4], tf.float32)})
    path = trained.export_saved_model(str(tmp_path / "export"), receiver)
    assert os.path.dirname(path) == str(tmp_path / "export") and os.path.basename(path).isdigit()
    assert os.listdir(tmp_path / "export") == [os.path.basename(path)]  # no temporary directory left
    served = tf.saved_model.load(path).signatures["serving_default"](x=tf.constant(X[:20]))
    predicted = list(trained.predict(input_fn_for(X[:20], batch=8, repeat=False)))
    # Served as one batch of 20, predicted in batches of 8: the matmuls may block differently, so the
    # float32 results agree to rounding (a few ulps), not bit for bit.
    np.testing.assert_allclose(served["logits"].numpy(), np.stack([p["logits"] for p in predicted]),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(served["classes"].numpy(), [p["classes"] for p in predicted])
    second = trained.export_saved_model(str(tmp_path / "export"), receiver)
    assert second != path and os.path.isdir(second)


def test_export_outputs_and_parsing_receiver(make_config, model_dir, tmp_path):
    def fn(features, labels, mode):
        spec = model_fn(features, labels, mode, {})
        if mode != ModeKeys.PREDICT:
            return spec
        return EstimatorSpec(mode, predictions=spec.predictions,
                             export_outputs={"scores": PredictOutput(spec.predictions["probabilities"])})

    est = NPUEstimator(fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y), steps=3)
    receiver = build_parsing_serving_input_receiver_fn({"x": tf.io.FixedLenFeature([4], tf.float32)})
    path = est.export_saved_model(str(tmp_path / "export"), receiver)
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString() for row in X[:3]]
    loaded = tf.saved_model.load(path)
    assert set(loaded.signatures) == {"serving_default", "scores"}
    out = loaded.signatures["serving_default"](examples=tf.constant(examples))["output"].numpy()
    np.testing.assert_allclose(out, softmax(_numpy_logits(est, X[:3])), rtol=1e-5, atol=1e-6)


def test_export_needs_a_checkpoint(make_config, model_dir, tmp_path):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
    with pytest.raises(ValueError, match="checkpoint"):
        est.export_saved_model(str(tmp_path / "e"), build_raw_serving_input_receiver_fn(
            {"x": tf.TensorSpec([None, 4], tf.float32)}))
