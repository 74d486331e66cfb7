"""The fifth random sample (seed 2034), first half: gaps its real scripts hit, each in the style of the script
that hit it; each test failed before its fix."""

import pytest

# CPC_ID0921's train_model.py: `from tensorflow.python import keras` next to
# `from tensorflow.python.keras import backend as K`, a session set on K with an NpuOptimizer custom_op, a
# functional encoder with BatchNormalization fitted from a keras Sequence (also Deep_Speech's form).
PYTHON_KERAS_SCRIPT = '''\
import numpy as np
from tensorflow.python import keras
from tensorflow.python.keras import backend as K
from tensorflow.python.keras.utils import Sequence

import tensorflow as tf
from npu_bridge.npu_init import *

sess_config = tf.ConfigProto()
custom_op = sess_config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
sess_config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
sess = tf.Session(config=sess_config)
K.set_session(sess)


class Pairs(Sequence):
    def __len__(self):
        return 3

    def __getitem__(self, index):
        rng = np.random.RandomState(index)
        x = rng.rand(8, 6, 6, 3).astype("float32")
        return x, (x.mean(axis=(1, 2, 3)) > 0.5).astype("float32")[:, None]


image = keras.layers.Input((6, 6, 3))
x = keras.layers.Conv2D(filters=4, kernel_size=3, strides=2, activation="linear")(image)
x = keras.layers.BatchNormalization()(x)
x = keras.layers.LeakyReLU()(x)
x = keras.layers.Flatten()(x)
out = keras.layers.Dense(units=1, activation="sigmoid")(x)
model = keras.models.Model(image, out, name="encoder")
model.compile(optimizer=keras.optimizers.Adam(lr=1e-3), loss="binary_crossentropy", metrics=["binary_accuracy"])
history = model.fit_generator(generator=Pairs(), steps_per_epoch=3, epochs=2, verbose=0)
print("same keras", keras.backend is K, "same session", K.get_session() is sess,
      "epochs", len(history.history["loss"]))
sess.close()
'''


@pytest.fixture(scope="module")
def python_keras_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("python_keras")
    (tmp_path / "train_model.py").write_text(PYTHON_KERAS_SCRIPT)
    return run_compat("run", tmp_path / "train_model.py", cwd=tmp_path)


def test_from_tensorflow_python_import_keras_is_tf_keras(python_keras_run):
    assert python_keras_run.returncode == 0, python_keras_run.stderr[-3000:]
    assert "same keras True same session True epochs 2" in python_keras_run.stdout, python_keras_run.stdout[-2000:]
