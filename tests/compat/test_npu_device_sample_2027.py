"""What the second draw of real TensorFlow2 ModelZoo npu_device scripts (docs/compat.md, random.Random(2027))
needed: TF 2.4-era names the official models' code vendored into those folders uses, in a script of our own in
that style (npu_device_scripts/tf24_official_loop.py) run with `npurun run`."""
import json
import os

import pytest

from .conftest import run_compat

SCRIPTS = os.path.join(os.path.dirname(__file__), "npu_device_scripts")
pytestmark = pytest.mark.slow


def test_tf24_official_models_names_train_a_custom_loop(tmp_path):
    # ResNet50_ID0360's tf2_common / lars_optimizer.py / performance.py: `from keras.optimizer_v2 import utils`
    # (2 TensorFlow2 folders), `from tensorflow.python.training import training_ops` (1), an absl enum with a str
    # enum_values (7), tf.keras.mixed_precision.experimental (7), ops.convert_to_tensor_v2 (3); np.float (5);
    # tf.keras.__version__ (subclassing_conv_layers_ID2615)
    out = tmp_path / "report.json"
    done = run_compat("run", os.path.join(SCRIPTS, "tf24_official_loop.py"), out, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["loss"][-1] < 0.2 * report["loss"][0], report["loss"]
    assert report["fp16_implementation"] == "keras"  # absl-py 0.x kept a str enum_values
    assert report["global_policy"] == "float32"
    assert report["policy"] == ["mixed_float16", "dynamic"]
    assert report["loss_scale"] == 128.0 and report["is_lso"] is True
    assert report["x_dtype"] == "float64"
    assert report["keras_version"].startswith("2.")  # tf-keras's: the script's tf.keras is Keras 2


def test_a_fixed_loss_scale_in_the_experimental_policy_is_refused_not_ignored(tmp_path):
    script = tmp_path / "policy.py"
    script.write_text("import tensorflow as tf\nimport npu_device\nnpu_device.open().as_default()\n"
                      "tf.keras.mixed_precision.experimental.Policy('mixed_float16', loss_scale=256)\n")
    done = run_compat("run", script, timeout=300)
    assert done.returncode != 0
    assert "loss_scale 'auto', 'dynamic' or None only" in done.stderr


def test_tf_compat_v1_after_the_npu_init_star_import_is_tensorflow_1s_api_with_the_estimator(tmp_path):
    # Roberta_Series' run_classifier.py: `import tensorflow as tf`, then `from npu_device.compat.v1.npu_init import *`
    # (whose `tf` is tf.compat.v1 under TensorFlow 2), then tf.compat.v1.estimator.tpu.RunConfig / TPUEstimator
    script = tmp_path / "classifier.py"
    script.write_text(
        "import tensorflow as tf\nimport npu_device\nfrom npu_device.compat.v1.npu_init import *\n"
        "npu_device.compat.enable_v1()\n"
        "config = tf.compat.v1.estimator.tpu.RunConfig(model_dir=%r, save_summary_steps=0,\n"
        "    tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(iterations_per_loop=10,\n"
        "        per_host_input_for_training=tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2))\n"
        "print(type(npu_run_config_init(run_config=config)).__name__, tf.compat.v1 is tf,"
        " callable(tf.placeholder), tf.executing_eagerly())\n" % str(tmp_path / "model"))
    done = run_compat("run", script, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["True", "True", "False"], done.stdout


def test_a_tf_keras_optimizer_compiled_in_tensorflow_1_graph_mode_trains_at_its_rate(tmp_path):
    # Oct-ResNet_ID2890: `from tensorflow.keras.optimizers import Adam`, npu_device.compat.enable_v1() and
    # tf.disable_v2_behavior(), then model.compile(optimizer=Adam(lr=...)) and fit on numpy
    script = tmp_path / "graph_fit.py"
    script.write_text(
        "import numpy as np\nfrom tensorflow import keras\nfrom tensorflow.keras.optimizers import Adam\n"
        "import npu_device\nfrom npu_device.compat.v1.npu_init import *\nnpu_device.compat.enable_v1()\n"
        "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\nfrom keras import backend as K\n"
        "x = np.random.RandomState(0).randn(256, 4).astype('float32')\ny = x.sum(axis=1, keepdims=True)\n"
        "model = keras.Sequential([keras.layers.Dense(8, activation='tanh', input_shape=(4,)), keras.layers.Dense(1)])\n"
        "model.compile(loss='mse', optimizer=Adam(lr=0.02))\n"
        "history = model.fit(x, y, batch_size=32, epochs=8, verbose=0).history['loss']\n"
        "print(tf.executing_eagerly(), round(float(K.get_value(model.optimizer.lr)), 6), history[-1] < 0.3 * history[0])\n")
    done = run_compat("run", script, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["False", "0.02", "True"], done.stdout
