"""`import npurun.estimator_api`: a plain `python train.py` on TensorFlow 2.21 gets tf.estimator (and
tf.keras.estimator) from that one line, and nothing of the TF 1 world or the Ascend adapter."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''\
    import os
    import sys

    import numpy as np
    import npurun.estimator_api  # noqa: F401  (the one npurun line)
    import tensorflow as tf
    from tensorflow.estimator import RunConfig

    x = np.linspace(-1, 1, 64, dtype="float32")[:, None]
    y = 3 * x + 1


    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).shuffle(64, seed=1).repeat().batch(8)


    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [1, 1], initializer=tf.compat.v1.zeros_initializer())
        b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
        predictions = tf.matmul(features["x"], w) + b
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
        loss = tf.reduce_mean(tf.square(predictions - labels))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.2).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        mae = tf.compat.v1.metrics.mean_absolute_error(labels, predictions)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={"mae": mae})


    def serving_input_fn():
        x_in = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
        return tf.estimator.export.ServingInputReceiver({"x": x_in}, {"x": x_in})


    estimator = tf.estimator.Estimator(model_fn, config=RunConfig(model_dir=sys.argv[1], save_checkpoints_steps=100))
    estimator.train(input_fn, max_steps=200)
    result = estimator.evaluate(input_fn, steps=4)
    export = estimator.export_saved_model(os.path.join(sys.argv[1], "export"), serving_input_fn)
    served = tf.saved_model.load(export.decode()).signatures["serving_default"](x=tf.constant([[2.0]]))
    print("RESULT", result["global_step"], sorted(result), round(float(served["y"].numpy()[0, 0]), 2))
    print("KERAS", tf.keras.estimator.model_to_estimator.__module__,
          tf.compat.v1.keras.estimator.model_to_estimator.__name__)
    print("PLAIN", tf.executing_eagerly(), "npu_bridge" in sys.modules, tf.compat.v1.Session.__module__,
          hasattr(tf, "contrib"), tf.compat.v1.estimator is tf.estimator)
    ''')


@pytest.mark.slow
def test_a_plain_python_script_gets_tf_estimator_from_one_import(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("TF_USE_LEGACY_KERAS", "NPURUN_VERBOSE", "TF_CONFIG")}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "model")], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    # Trained (y = 3x + 1, served at x=2), evaluated with the model_fn's metric, exported and served.
    assert lines[0] == "RESULT 200 ['global_step', 'loss', 'mae'] 7.0"
    # tf.keras is Keras 3 here: its estimator module is npurun's (refusing Keras 3 models with the tf-keras way);
    # Keras 3's tf.compat.v1.keras is the same module as its tf.keras, so it has tf.keras's function.
    assert lines[1] == "KERAS npurun.tf_estimator.keras model_to_estimator"
    # Nothing else: eager TensorFlow 2, no adapter names, TensorFlow's own Session, no tf.contrib.
    assert lines[2] == "PLAIN True False tensorflow.python.client.session False True"
    assert "Traceback" not in done.stderr and "WARNING: All log messages before absl" not in done.stderr


@pytest.mark.slow  # loads Keras 3 (tf.keras) into the test process
def test_detach_leaves_tensorflow_as_it_was():
    import tensorflow as tf

    import npurun.estimator_api as api

    api.attach()  # idempotent (the import attached already, unless an earlier test detached)
    assert tf.estimator.Estimator.__module__ == "tensorflow.estimator" and tf.compat.v1.estimator is tf.estimator
    assert sys.modules["tensorflow.estimator"] is tf.estimator
    api.detach()
    assert not hasattr(tf, "estimator") and "tensorflow.estimator" not in sys.modules
    assert not hasattr(tf.compat.v1, "estimator") and not hasattr(tf.keras, "estimator")
