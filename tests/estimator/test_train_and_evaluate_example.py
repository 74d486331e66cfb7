"""train_and_evaluate in one process, and the bundled digits example."""
import os

import numpy as np
import pytest
import tensorflow as tf

from estimator_helpers import input_fn_for, make_data, model_fn
from npurun.estimator import EvalSpec, NPUEstimator, TrainSpec, train_and_evaluate

X, Y = make_data()


class RecordingExporter:
    name = "recording"

    def __init__(self):
        self.calls = []

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.calls.append((eval_result["global_step"], is_the_final_export))
        return export_path


def test_evaluates_after_checkpoints_and_at_the_end(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=5))
    exporter = RecordingExporter()
    result, exports = train_and_evaluate(
        est, TrainSpec(input_fn_for(X, Y), max_steps=12),
        EvalSpec(input_fn_for(X, Y, repeat=False), steps=None, throttle_secs=0, exporters=exporter))
    assert result["global_step"] == 12
    assert [step for step, _ in exporter.calls] == [5, 10, 12]
    assert exports == [os.path.join(model_dir, "export", "recording")]  # the last evaluation's, as tf.estimator
    assert result == pytest.approx(est.evaluate(input_fn_for(X, Y, repeat=False)))


def test_throttle_secs_skips_evaluations_but_not_the_final_one(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=2))
    exporter = RecordingExporter()
    train_and_evaluate(est, TrainSpec(input_fn_for(X, Y), max_steps=8),
                       EvalSpec(input_fn_for(X, Y, repeat=False), throttle_secs=3600, exporters=[exporter]))
    assert exporter.calls == [(2, False), (8, True)]


def test_specs_are_checked():
    with pytest.raises(ValueError, match="max_steps"):
        TrainSpec(lambda: None, max_steps=0)
    with pytest.raises(ValueError, match="steps"):
        EvalSpec(lambda: None, steps=0)
    with pytest.raises(TypeError, match="TrainSpec"):
        train_and_evaluate(object(), "train", EvalSpec(lambda: None))


def test_bundled_digits_example(make_config, tmp_path):
    from npurun.example import run_example

    result = run_example(make_config(model_dir=str(tmp_path / "model")), train_steps=400)
    assert result["accuracy"] > 0.9 and result["global_step"] == 400
    assert os.path.dirname(result["export_path"]) == str(tmp_path / "model" / "export")
    from npurun.example.digits import load_digits
    pixels, labels = load_digits("test")
    served = tf.saved_model.load(result["export_path"]).signatures["serving_default"](pixels=tf.constant(pixels))
    assert np.mean(served["classes"].numpy() == labels) == pytest.approx(result["accuracy"], abs=1e-6)
