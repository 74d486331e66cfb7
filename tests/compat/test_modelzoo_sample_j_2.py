"""The fifth random sample (seed 2034), folders PixelCNN++_ID2101 and 3D_UNet-Medical_ID1462: gaps their real
scripts hit, each in the style of the script that hit it; each test failed before its fix."""

import pytest

# PixelCNN++'s train.py: a uint8 image loader scaled to [-1, 1] for the feeds with NumPy 1's
# `np.cast[np.float32](...)` (removed in NumPy 2.0; RealNVP and PixelLink too), trained in a tf.Session made
# with npu_config_proto(); np.asfarray (also removed) as MLSP's kutils uses it.
NUMPY_CAST_SCRIPT = '''\
from npu_bridge.npu_init import *

import numpy as np
import tensorflow as tf


class Loader(object):
    def __init__(self, batch_size):
        self.data = np.random.RandomState(0).randint(0, 256, (12, 4, 4, 3)).astype(np.uint8)
        self.batch_size = batch_size
        self.p = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.p + self.batch_size > self.data.shape[0]:
            self.p = 0
            raise StopIteration
        x = self.data[self.p:self.p + self.batch_size]
        self.p += self.batch_size
        return x


def make_feed_dict(x):
    x = np.cast[np.float32]((x - 127.5) / 127.5)
    return {xs: x}


xs = tf.placeholder(tf.float32, shape=(4, 4, 4, 3))
w = tf.get_variable("w", [3, 3, 3, 2], initializer=tf.random_normal_initializer(0, 0.05))
loss = tf.reduce_mean(tf.square(tf.nn.conv2d(xs, w, [1, 1, 1, 1], "SAME")))
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
sess = tf.Session(config=npu_config_proto())
sess.run(tf.global_variables_initializer())
losses = [sess.run([loss, train_op], make_feed_dict(d))[0] for d in Loader(4)]
fed = make_feed_dict(Loader(4).data[:4])[xs]
print("steps", len(losses), "fed", fed.dtype, float(fed.min()) >= -1.0, float(fed.max()) <= 1.0)
print("cast", np.cast["int"](np.array([1.7, -2.2])).tolist(), np.cast[float](3).dtype)
print("asfarray", np.asfarray([1, 2], dtype="float32").dtype, np.asfarray([1, 2], dtype="int32").dtype)
'''


@pytest.fixture(scope="module")
def numpy_cast_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("numpy_cast")
    (tmp_path / "train.py").write_text(NUMPY_CAST_SCRIPT)
    return (run_compat("run", tmp_path / "train.py", cwd=tmp_path),
            run_compat("check", tmp_path / "train.py", cwd=tmp_path))


def test_numpy_cast_of_numpy_1_scales_the_feeds(numpy_cast_run):
    run, _ = numpy_cast_run
    assert run.returncode == 0, run.stderr[-3000:]
    assert "steps 3 fed float32 True True" in run.stdout, run.stdout[-2000:]
    assert "cast [1, -2] float64" in run.stdout, run.stdout[-2000:]
    assert "asfarray float32 float64" in run.stdout, run.stdout[-2000:]


def test_check_no_longer_says_numpy_cast_will_raise(numpy_cast_run):
    _, check = numpy_cast_run
    assert "numpy.cast" not in check.stdout and "numpy.asfarray" not in check.stdout, check.stdout[-3000:]
    assert "will raise here" not in check.stdout or "0 will raise" in check.stdout, check.stdout[-3000:]
