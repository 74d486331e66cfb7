"""TensorFlow's custom-Estimator tutorial script runs unchanged under `npurun run`.

Code written for tf.estimator (TensorFlow <= 2.15) builds `tf.keras.layers` in model_fn and calls
train, evaluate, predict and export in one process, each in a graph of its own. It was written for
Keras 2: `npurun run` gives it tf-keras, and NPUEstimator counts Keras 3's layer names per graph
for library users (tests/estimator/test_tf_estimator_keras_layers.py).
"""
import re

from .conftest import run_compat

SCRIPT = __import__("pathlib").Path(__file__).parent / "scripts" / "iris_custom_estimator.py"


def test_the_custom_estimator_tutorial_trains_evaluates_predicts_and_exports(tmp_path):
    done = run_compat("run", SCRIPT, cwd=tmp_path, env={"IRIS_MODEL_DIR": str(tmp_path / "model")})
    assert done.returncode == 0, done.stderr[-3000:]
    accuracy = float(re.search(r"Test set accuracy: ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.85
    predicted, expected = re.search(r"pred (\[.*?\]) (\[.*?\])", done.stdout).groups()
    assert predicted == expected
    assert re.search(r"export b'.*/model/export/\d+'", done.stdout)
    assert "does not restore" not in done.stderr
