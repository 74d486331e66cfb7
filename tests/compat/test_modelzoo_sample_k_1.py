"""The sixth random sample (seed 2036), first two folders: gaps their real scripts hit, each in the style of the
script that hit it; each test failed before its fix."""

import pytest

# GFLmser's GFLmser.py: `from tensorflow.python.compat import compat` and every batch normalization of its residual
# blocks built inside `compat.forward_compatibility_horizon(2019, 5, 1)` (the `tf.compat.` spelling is the other
# ModelZoo form), a GAN-style pair of Adam optimizers over variable-scope collections, trained by feed_dict in a
# session with an NpuOptimizer custom_op.
HORIZON_SCRIPT = '''\
import numpy as np
import tensorflow as tf
from tensorflow.python.compat import compat
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig


def block(x, planes, training):
    with compat.forward_compatibility_horizon(2019, 5, 1):
        out = tf.layers.batch_normalization(x, training=training)
    out = tf.layers.conv2d(tf.nn.relu(out), filters=planes, kernel_size=3, padding="same", use_bias=False)
    with tf.compat.forward_compatibility_horizon(2019, 5, 1):
        out = tf.layers.batch_normalization(out, training=training)
        inside = compat.forward_compatible(2020, 1, 1)
    return out + tf.layers.conv2d(x, filters=planes, kernel_size=1), inside


images = tf.placeholder(tf.float32, [2, 8, 8, 3])
training = tf.placeholder(tf.bool)
with tf.variable_scope("generator", reuse=tf.AUTO_REUSE):
    out, inside = block(images, 4, training)
    out, _ = block(out, 4, training)
with tf.variable_scope("critic", reuse=tf.AUTO_REUSE):
    score = tf.layers.dense(tf.reshape(out, (2, -1)), units=1)
g_loss = tf.reduce_mean(tf.square(out - images[..., :1]))
d_loss = tf.reduce_mean(tf.square(score - 1.0))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    g_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(
        g_loss, var_list=tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="generator"))
    d_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(
        d_loss, var_list=tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="critic"))

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    feed = {images: np.random.RandomState(0).rand(2, 8, 8, 3).astype("float32"), training: True}
    for step in range(2):
        _, g = sess.run([g_op, g_loss], feed)
        _, d = sess.run([d_op, d_loss], feed)
    print("trained", step + 1, "finite", bool(np.isfinite(g) and np.isfinite(d)), "horizon is 2.21's", inside)
'''


@pytest.fixture(scope="module")
def horizon_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("horizon")
    (tmp_path / "main_li.py").write_text(HORIZON_SCRIPT)
    return run_compat("run", tmp_path / "main_li.py", cwd=tmp_path)


def test_past_forward_compatibility_horizon_is_quiet(horizon_run):
    """TF 1.15 took a past horizon silently; TensorFlow 2.21 ignores it (its ops run the same on CPU) and warns at
    every entry: under `npurun run` that warning is not printed, and the script trains."""
    assert horizon_run.returncode == 0, horizon_run.stderr[-3000:]
    assert "trained 2 finite True horizon is 2.21's True" in horizon_run.stdout, horizon_run.stdout[-2000:]
    assert "forward compatibility date" not in horizon_run.stderr, horizon_run.stderr[-3000:]


# Cars_for_TensorFlow's Vega tree: `import vega` reaches a hyper-parameter module doing
# `from collections import Iterable, defaultdict` (Python 3.7's alias of collections.abc's class) before any
# TensorFlow, and its CIFAR-10 reader is a FixedLengthRecordDataset through `tf.contrib.data.map_and_batch`.
SEARCH_SPACE_MODULE = '''\
import collections
from collections import Iterable, defaultdict


class HyperParameter(object):
    def __init__(self, name, value_range):
        if not isinstance(value_range, Iterable) or not isinstance(value_range, collections.Sequence):
            raise ValueError("range must be a sequence")
        self.name = name
        self.range = list(value_range)
        self.children = defaultdict(list)
'''

RECORDS_SCRIPT = '''\
import os
import sys

import numpy as np

from space.hyper_parameter import HyperParameter
import tensorflow as tf

batch = HyperParameter("batch_size", [2, 4])
path = os.path.join(sys.argv[1], "data_batch_1.bin")
records = np.random.RandomState(0).randint(0, 256, size=(6, 1 + 4 * 4 * 3)).astype(np.uint8)
records[:, 0] = np.arange(6) % 10
records.tofile(path)


def data_map_func(value):
    vector = tf.decode_raw(value, tf.uint8)
    image = tf.cast(tf.transpose(tf.reshape(vector[1:], [3, 4, 4]), [1, 2, 0]), tf.float32)
    return tf.image.per_image_standardization(image), tf.cast(vector[0], tf.int32)


dataset = tf.data.FixedLengthRecordDataset([path], 1 + 4 * 4 * 3)
dataset = dataset.apply(tf.contrib.data.map_and_batch(data_map_func, batch_size=batch.range[0],
                                                      num_parallel_batches=1, drop_remainder=True))
images, labels = dataset.make_one_shot_iterator().get_next()
with tf.Session() as sess:
    seen = []
    try:
        while True:
            seen.extend(sess.run(labels).tolist())
    except tf.errors.OutOfRangeError:
        pass
import collections.abc
print("labels", seen, "abc", HyperParameter.__init__.__globals__["Iterable"] is collections.abc.Iterable)
'''


@pytest.fixture(scope="module")
def collections_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("collections_abcs")
    (tmp_path / "space").mkdir()
    (tmp_path / "space" / "__init__.py").write_text("")
    (tmp_path / "space" / "hyper_parameter.py").write_text(SEARCH_SPACE_MODULE)
    (tmp_path / "run_example.py").write_text(RECORDS_SCRIPT)
    return run_compat("run", tmp_path / "run_example.py", tmp_path, cwd=tmp_path)


def test_collections_abc_aliases_of_python_3_7(collections_run):
    """`from collections import Iterable` and `collections.Sequence` (Python 3.7's, removed in 3.10) are
    collections.abc's classes again under `npurun run`, before the script imports TensorFlow."""
    assert collections_run.returncode == 0, collections_run.stderr[-3000:]
    assert "labels [0, 1, 2, 3, 4, 5] abc True" in collections_run.stdout, collections_run.stdout[-2000:]


# Cars' Vega scheduler: the trainer runs in a `dask-worker` process the script starts (`subprocess.Popen` of a
# new interpreter with the script's environment), which imports the script's own package (its optim.py takes
# NPUDistributedOptimizer from npu_bridge before anything imports TensorFlow) and builds a TF 1 graph.
LAUNCHER_SCRIPT = '''\
import os
import subprocess
import sys

import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
env = dict(os.environ, RANK_SIZE="1", DEVICE_ID="3")
env["RANK_ID"] = env["DEVICE_ID"]  # Vega's single-NPU trainer: one rank, numbered as its device
worker = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "worker.py")], env=env)
print("worker exit", worker.wait())
'''

WORKER_SCRIPT = '''\
from collections import Iterable

from npu_bridge.estimator.npu.npu_optimizer import NPUDistributedOptimizer
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 2])
loss = tf.reduce_sum(tf.layers.dense(x, 1))
config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    print("worker graph mode", not tf.executing_eagerly(), "sum", sess.run(loss, {x: [[0.0, 0.0]]}) * 0.0)
'''


@pytest.fixture(scope="module")
def child_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("child_world")
    (tmp_path / "run_example.py").write_text(LAUNCHER_SCRIPT)
    (tmp_path / "worker.py").write_text(WORKER_SCRIPT)
    return run_compat("run", tmp_path / "run_example.py", cwd=tmp_path)


def test_python_processes_a_script_starts_get_its_world(child_run):
    """A Python child of an `npurun run` script (Vega's dask-worker, `subprocess.run(["python3", "eval.py"])`) gets
    the TF1 world, as TensorFlow 1.15 was the whole system's on Ascend."""
    assert child_run.returncode == 0, child_run.stderr[-3000:]
    assert "worker graph mode True sum 0.0" in child_run.stdout, (child_run.stdout[-2000:], child_run.stderr[-3000:])
    assert "worker exit 0" in child_run.stdout, child_run.stdout[-2000:]
