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

_NATIVE_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ \S+:\d+\] ", re.M)


@pytest.fixture(scope="module")
def vsl_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vsl")
    (folder / "vsl_imrec.py").write_text(VSL_STYLE_SCRIPT)
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("TF_CPP_MIN_LOG_LEVEL", "NPURUN_VERBOSE")}
    environment["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, "-m", "npurun.compat", "run", "vsl_imrec.py"], cwd=folder,
                          env=environment, capture_output=True, text=True, timeout=600)


def test_vsl_style_script_trains(vsl_run):
    assert vsl_run.returncode == 0, vsl_run.stderr
    assert "Epoch: 0002 | total-loss: " in vsl_run.stdout


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0"),
                    reason="with an NVIDIA device node the cuInit line may explain a missing GPU and is kept")
def test_vsl_style_script_shows_no_tensorflow_chatter(vsl_run):
    assert "failed call to cuInit" not in vsl_run.stderr
    assert "absl::InitializeLog" not in vsl_run.stderr
    assert _NATIVE_LINE.findall(vsl_run.stderr) == [], vsl_run.stderr
