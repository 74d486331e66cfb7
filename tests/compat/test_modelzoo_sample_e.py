"""Issue 23's seed-2026 sample, part e: gaps its real scripts hit, each in the style of the script that hit it.

One `npurun run` subprocess runs one script with a section per gap (each prints its own line or the error it
raised), so the gaps cost one start-up of TensorFlow together.
"""
import pytest

SAMPLE_E_SCRIPT = '''\
import os
import tempfile

import numpy as np
from npu_bridge.npu_init import *
import tensorflow.compat.v1 as tf


def section(name, body):
    try:
        body()
    except Exception as error:  # each section reports its own failure; the others still run
        print(name, "raised", type(error).__name__, error)


# SpineNet_ID0709's executor (and XLNet_ID0025's model_utils): a GPU-style branch builds the adapter's
# strategy and hands it to NPURunConfig(train_distribute=...) of an NPUEstimator.
def strategy_in_run_config():
    def model_fn(features, labels, mode, params):
        logits = tf.layers.dense(features["x"], 2, name="head")
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        x = np.random.RandomState(0).rand(16, 4).astype(np.float32)
        y = (x[:, 0] > 0.5).astype(np.int32)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(params["batch_size"])

    strategy = npu_strategy.NPUStrategy()
    tf.logging.info("Number of devices: %s", strategy.num_replicas_in_sync)
    model_params = {"batch_size": 4}
    npu_run_config = NPURunConfig(train_distribute=strategy, model_dir=tempfile.mkdtemp(), log_step_count_steps=1)
    estimator = NPUEstimator(model_fn=model_fn, config=npu_run_config_init(npu_run_config), params=model_params)
    total_steps = 3
    estimator.train(input_fn=input_fn, max_steps=total_steps, hooks=npu_hooks_append(hooks_list=total_steps))
    print("strategy_estimator", strategy.num_replicas_in_sync, estimator.get_variable_value("global_step"),
          type(strategy).__name__)


section("strategy_estimator", strategy_in_run_config)


# Fixmatch_ID0843's imagenet/training.py: the strategy's devices size the batch, variables are made under
# its scope, and the input pipeline goes through experimental_distribute_dataset (sharded by rank there).
def strategy_scope():
    from npu_bridge.estimator.npu import npu_strategy as strategies

    with tf.Graph().as_default():
        distribution_strategy = strategies.NPUStrategy()
        num_workers = len(distribution_strategy.extended.worker_devices)
        batch_size = 4 * num_workers
        with distribution_strategy.scope():
            weights = tf.get_variable("w", [3], initializer=tf.ones_initializer())
        dataset = tf.data.Dataset.range(8).batch(batch_size)
        distributed = distribution_strategy.experimental_distribute_dataset(dataset)
        first = tf.data.make_one_shot_iterator(dataset).get_next()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print("strategy_scope", num_workers, batch_size, sess.run(weights).tolist(), sess.run(first).tolist(),
                  distribution_strategy.num_replicas_in_sync, distributed is not None)


section("strategy_scope", strategy_scope)
'''


@pytest.fixture(scope="module")
def sample_e_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("sample_e")
    (folder / "train.py").write_text(SAMPLE_E_SCRIPT)
    done = run_compat("run", folder / "train.py", cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_npu_strategy_in_an_npu_run_config_trains_as_one_device(sample_e_run):
    assert "strategy_estimator 1 3 NPUStrategy" in sample_e_run, sample_e_run[-2000:]


def test_npu_strategy_scope_and_distributed_dataset_in_a_graph(sample_e_run):
    assert "strategy_scope 1 4 [1.0, 1.0, 1.0] [0, 1, 2, 3] 1 True" in sample_e_run, sample_e_run[-2000:]


# texting_ID0193's utils.py (4 folders): SciPy 1.8 made `scipy.sparse.linalg.eigen` a deprecation shim module, so the
# import below is a ModuleNotFoundError before training starts; check said "0 will raise" for it.
TEXTING_UTILS = '''\
import numpy as np
import pickle as pkl
import scipy.sparse as sp
from scipy.sparse.linalg.eigen.arpack import eigsh
import sys, re


def load_data(dataset_str, data_url):
    return pkl.load(open("{}/ind.{}.x_adj".format(data_url, dataset_str), "rb"))
'''


def test_check_names_an_import_below_an_installed_plain_module():
    from npurun.tools.check import check_source

    findings = {f.name: f for f in check_source(TEXTING_UTILS)}
    missing = findings["scipy.sparse.linalg.eigen.arpack"]
    assert missing.error and "not a package" in missing.detail and "ModuleNotFoundError" in missing.detail
    assert not any(f.error for name, f in findings.items() if name != "scipy.sparse.linalg.eigen.arpack")


def test_check_still_accepts_the_imports_that_exist():
    from npurun.tools.check import check_source

    source = "from scipy.sparse.linalg import eigsh\nimport scipy.sparse.linalg\nfrom scipy.io import loadmat\n"
    assert not [f for f in check_source(source) if f.error]


# VDSR_ID2114's VDSR.py: a module constant picks the input pipeline, and the branch it does not pick reads a name
# the script never defines (MAX_EPOCH became a flag, args.MAX_EPOCH); check counted that NameError as raising.
VDSR_MAIN = '''\
import tensorflow as tf
from npu_bridge.npu_init import *
import argparse

BATCH_SIZE = 64
USE_QUEUE_LOADING = True

parser = argparse.ArgumentParser()
parser.add_argument("--MAX_EPOCH", type=int, default=100)
args = parser.parse_args()

if __name__ == '__main__':
    if not USE_QUEUE_LOADING:
        train_input = tf.placeholder(tf.float32, shape=(BATCH_SIZE, 41, 41, 1))
    with tf.Session() as sess:
        if USE_QUEUE_LOADING:
            for epoch in range(0, args.MAX_EPOCH):
                pass
        else:
            for epoch in range(0, MAX_EPOCH):
                print(train_input, UNDEFINED_TOO)
    print(UNDEFINED_TOO)
'''


def test_check_does_not_count_a_name_error_on_the_branch_a_module_constant_rules_out():
    from npurun.tools.check import check_source

    findings = {f.name: f for f in check_source(VDSR_MAIN)}
    max_epoch = findings["MAX_EPOCH"]
    assert not max_epoch.error and "only if not `USE_QUEUE_LOADING` (USE_QUEUE_LOADING = True in the module)" in \
        max_epoch.status and "edited so" in max_epoch.detail
    assert findings["UNDEFINED_TOO"].error  # also read outside the branch: it raises


def test_a_constant_the_module_rebinds_decides_nothing():
    from npurun.tools.check import check_source

    source = VDSR_MAIN.replace("args = parser.parse_args()", "args = parser.parse_args()\nUSE_QUEUE_LOADING = False")
    assert {f.name: f for f in check_source(source)}["MAX_EPOCH"].error


# SpineNet_ID0709's official/efficientnet/condconv/condconv_layers.py (4 folders): a Keras-style layer's build sets
# `tf.layers.InputSpec`, which the TF1 world has; check called it "not provided" (a false "will raise").
CONDCONV_LAYERS = '''\
from npu_bridge.npu_init import *
import tensorflow.compat.v1 as tf


class CondConv2D(tf.keras.layers.Conv2D):
    def build(self, input_shape):
        channel_axis = -1
        input_dim = int(input_shape[channel_axis])
        self.input_spec = tf.layers.InputSpec(ndim=self.rank + 2, axes={channel_axis: input_dim})
        self.built = True


def conv(inputs):
    return tf.layers.Conv2DTranspose(8, 3)(tf.layers.SeparableConv2D(8, 3)(inputs))
'''


def test_check_knows_every_class_of_tf115s_tf_layers():
    from npurun.tools.check import check_source

    findings = check_source(CONDCONV_LAYERS)
    assert not [f for f in findings if f.error], [f for f in findings if f.error]
    spec = next(f for f in findings if f.name.endswith("layers.InputSpec"))
    assert spec.status == "provided by `npurun run`"
