"""The fourth random sample (seed 2032), first half: gaps its real scripts hit, each in the style of the script
that hit it; each test failed before its fix.
"""
import os
import re
import subprocess
import sys

import pytest

# VSL_ID1291's vsl_imrec.py: a model class that opens `tf.InteractiveSession(config=npu_config_proto())` and trains
# on feeds. Run as `python -m npurun.compat run` (the old path to `npurun run`) with the user's environment, TensorFlow
# printed its start-up banner (the script, not npurun, imported it), and the script's own session, TensorFlow's first
# device discovery here, logged "E0000 ... cuda_platform.cc:52] failed call to cuInit" on a machine with no GPU.
VSL_STYLE_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf
from tensorflow.contrib import layers


class ShapeLearner(object):
    def __init__(self, batch_size):
        self.x = tf.placeholder(tf.float32, [batch_size, 4])
        w = tf.get_variable(name="enc_fc1", shape=[4, 1], initializer=layers.xavier_initializer())
        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, w) - 1.0))
        self.optimizer = tf.train.AdamOptimizer(0.1).minimize(self.loss)
        self.sess = tf.InteractiveSession(config=npu_config_proto())
        self.sess.run(tf.global_variables_initializer())

    def model_fit(self, x):
        cost, _ = self.sess.run((self.loss, self.optimizer), feed_dict={self.x: x})
        return cost


VSL = ShapeLearner(batch_size=2)
for epoch in range(3):
    cost = VSL.model_fit(np.ones((2, 4), np.float32))
print("Epoch: {:04d} | total-loss: {:.4f}".format(epoch, cost))
print("GPU available:", tf.test.is_gpu_available())
'''

# squeezenet_ID0194's train_npu.py: Keras 2 on the script's session (`K.set_session`), pretrained weights loaded,
# then `fit` on a tf.data dataset with `steps_per_epoch` and `model.save("....h5")`. TensorFlow 2's
# `tf.control_dependencies` marked ops the session already had, and TensorFlow logged "W0000 ... c_api.cc:305]
# Operation '...' was changed by setting attribute after it was run by a session" for each; the progress bar showed
# `batch: 0.5000 - size: 1.0000` as metrics; tf-keras warned about its own `Model.state_updates` and the HDF5 format;
# Keras's check that the dataset is shuffled added a DatasetToGraphV2 op to the graph, whose types TensorFlow 2's type
# inference then logged as a failure ("W0000 ... type_inference.cc:340] Type inference failed ...", 50 lines). TF 1.15's
# check warned, as this one does, only when the dataset is not shuffled.
SQUEEZENET_STYLE_SCRIPT = '''\
import numpy as np
import tensorflow as tf
from tensorflow.python.keras import backend as K
from tensorflow.keras.layers import Input, Convolution2D, Activation, GlobalAveragePooling2D
from tensorflow.keras.models import Model
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

sess_config = tf.ConfigProto()
custom_op = sess_config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
sess_config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
sess = tf.Session(config=sess_config)
K.set_session(sess)

img_input = Input(shape=(8, 8, 3))
x = Convolution2D(4, (3, 3), padding="valid", name="conv1")(img_input)
x = Activation("softmax", name="loss")(GlobalAveragePooling2D()(x))
model = Model(img_input, x, name="squeezenet")
model.save_weights("weights.h5")
model.load_weights("weights.h5")

images = np.random.rand(8, 8, 8, 3).astype(np.float32)
labels = np.eye(4, dtype=np.float32)[np.arange(8) % 4]
plain = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(4)
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(8).repeat()
dataset = dataset.apply(tf.data.experimental.map_and_batch(map_func=lambda x, y: (x, y), batch_size=4))
dataset = dataset.prefetch(4)
top_5_acc = tf.keras.metrics.TopKCategoricalAccuracy(k=2)
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=1e-3, momentum=0.09),
              loss="categorical_crossentropy", metrics=["accuracy", top_5_acc])
print("start training!")
model.fit(dataset, steps_per_epoch=2, epochs=1, validation_data=dataset, validation_steps=1)
model.fit(plain, steps_per_epoch=1, epochs=1, verbose=0)
model.save("epoch_80.h5")
print("saved")
'''

_NATIVE_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ \S+:\d+\] ", re.M)


def _run_as_a_user(tmp_path_factory, name, script):
    """`python -m npurun.compat run NAME` with the user's environment: no TF_CPP_MIN_LOG_LEVEL (conftest's
    run_compat sets 2, which would hide the WARNING lines these tests are about)."""
    folder = tmp_path_factory.mktemp(name.partition(".")[0])
    (folder / name).write_text(script)
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TF_CPP_MIN_LOG_LEVEL", "NPURUN_VERBOSE")}
    environment["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, "-m", "npurun.compat", "run", name], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def vsl_run(tmp_path_factory):
    return _run_as_a_user(tmp_path_factory, "vsl_imrec.py", VSL_STYLE_SCRIPT)


def test_vsl_style_script_trains(vsl_run):
    assert vsl_run.returncode == 0, vsl_run.stderr
    assert "Epoch: 0002 | total-loss: " in vsl_run.stdout


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0"),
                    reason="with an NVIDIA device node the cuInit line may explain a missing GPU and is kept")
def test_vsl_style_script_shows_no_tensorflow_chatter(vsl_run):
    assert "failed call to cuInit" not in vsl_run.stderr
    assert "absl::InitializeLog" not in vsl_run.stderr
    assert _NATIVE_LINE.findall(vsl_run.stderr) == [], vsl_run.stderr


@pytest.fixture(scope="module")
def squeezenet_run(tmp_path_factory):
    return _run_as_a_user(tmp_path_factory, "train_npu.py", SQUEEZENET_STYLE_SCRIPT)


def test_squeezenet_style_keras_fit_trains_and_saves(squeezenet_run):
    assert squeezenet_run.returncode == 0, squeezenet_run.stderr
    assert "saved" in squeezenet_run.stdout
    assert re.search(r"2/2 \S* - \S+ \S+ - loss: [\d.]+ - acc: [\d.]+ - top_k_categorical_accuracy: ",
                     squeezenet_run.stdout), squeezenet_run.stdout


def test_squeezenet_style_keras_fit_shows_no_tensorflow_chatter(squeezenet_run):
    assert "was changed by setting attribute after it was run by a session" not in squeezenet_run.stderr
    assert "c_api.cc" not in squeezenet_run.stderr
    assert "batch:" not in squeezenet_run.stdout and "size:" not in squeezenet_run.stdout
    assert "state_updates" not in squeezenet_run.stderr
    assert "HDF5 file" not in squeezenet_run.stderr
    assert "Type inference failed" not in squeezenet_run.stderr and "TFT_" not in squeezenet_run.stderr
    assert _NATIVE_LINE.findall(squeezenet_run.stderr) == [], squeezenet_run.stderr


def test_squeezenet_style_only_the_unshuffled_dataset_is_named(squeezenet_run):
    assert squeezenet_run.stderr.count("Expected a shuffled dataset but input dataset `x` is not shuffled") == 1


# SRNTT-l2_ID0272's vendored tensorlayer (prepro.py): the Python 2 module chosen by a version test bound to a name.
# `npurun check` counted `import Queue` as raising; on Python 3 that branch never runs.
SRNTT_STYLE_IMPORTS = '''\
import sys
import threading
from npu_bridge.npu_init import *

is_py2 = sys.version[0] == '2'
if is_py2:
    import Queue as queue
else:
    import queue as queue
if sys.version_info[0] < 3:
    import cPickle as pickle
if sys.version_info >= (3, 0):
    import srntt_missing_module
work = queue.Queue()
'''


def test_srntt_style_python2_branch_imports_are_not_counted():
    from npurun.tools.check import check_source

    raising = {f.name for f in check_source(SRNTT_STYLE_IMPORTS) if f.error}
    assert "Queue" not in raising and "cPickle" not in raising, raising
    assert "srntt_missing_module" in raising  # a branch Python 3 takes is still checked
