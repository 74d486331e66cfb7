"""Patterns of a second round of real ModelZoo-TensorFlow scripts run unmodified under `npurun run`
(docs/compat.md, "Real ModelZoo scripts", issue 23); each test failed before its fix."""

import numpy as np
import pytest
import tensorflow as tf

from npurun import NPUEstimator, NPURunConfig
from npurun.estimator import EstimatorSpec
from npurun.precision import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer

from .test_modelzoo_patterns import _input_fn, control_flow  # noqa: F401 (a fixture)

v1 = tf.compat.v1


class _PretrainingLogHook(v1.train.SessionRunHook):
    """BERT (bert-google-npu) run_pretraining's _LogSessionRunHook: fetches by name what the adapter names."""

    def __init__(self):
        self.seen = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(fetches=["global_step:0", "total_loss:0", "loss_scale:0",
                                                "apply_grads/overflow_status_reduce_all:0"])

    def after_run(self, run_context, run_values):
        global_step, total_loss, loss_scale, overflow = run_values.results
        self.seen.append((global_step + 1, total_loss, loss_scale, overflow))  # `global_step + 1` as the hook does


def _pretraining_model_fn(features, labels, mode):
    weights = v1.get_variable("w", [3, 2], initializer=v1.zeros_initializer())
    logits = tf.matmul(features["x"], weights)
    total_loss = tf.identity(v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits), name="total_loss")
    global_step = v1.train.get_or_create_global_step()
    loss_scale_manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 10, incr_every_n_steps=1000,
                                                           decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    optimizer = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(0.5), loss_scale_manager)
    grads_and_vars = optimizer.compute_gradients(total_loss, v1.trainable_variables())
    with tf.name_scope("apply_grads"):
        train_op = optimizer.apply_gradients(grads_and_vars, global_step=global_step)
    return EstimatorSpec(mode, loss=total_loss, train_op=train_op)


@pytest.mark.parametrize("iterations_per_loop", [1, 4])
def test_a_hook_fetching_the_adapters_loss_scale_names_and_global_step_by_name_gets_their_values(
        tmp_path, control_flow, iterations_per_loop):
    hook = _PretrainingLogHook()
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=iterations_per_loop,
                          save_checkpoints_steps=100, log_step_count_steps=None)
    NPUEstimator(_pretraining_model_fn, config=config).train(_input_fn, max_steps=8, hooks=[hook])
    assert len(hook.seen) == 8 // iterations_per_loop
    steps = [int(step) for step, _, _, _ in hook.seen]
    assert steps == sorted(steps) and all(1 <= s <= 9 for s in steps), steps
    assert [float(scale) for _, _, scale, _ in hook.seen] == [1024.0] * len(hook.seen)
    assert all(overflow is True or overflow == np.bool_(True) for _, _, _, overflow in hook.seen)
    assert all(np.asarray(overflow).dtype == np.bool_ for _, _, _, overflow in hook.seen)


def test_the_adapters_loss_scale_is_named_in_the_scope_the_manager_was_made_in():
    graph = tf.Graph()
    with graph.as_default():
        x = v1.get_variable("x", initializer=tf.constant([1.0, 2.0]))
        with tf.name_scope("rmsprop"):  # Hourglass: get_tensor_by_name("rmsprop/loss_scale:0")
            manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 8, incr_every_n_steps=1)
        optimizer = NPULossScaleOptimizer(v1.train.RMSPropOptimizer(0.01), manager)
        train_op = optimizer.minimize(tf.reduce_sum(x * x))
        merged = v1.summary.merge_all()
        init = v1.global_variables_initializer()
    assert graph.get_tensor_by_name("rmsprop/loss_scale:0").op.type == "VarHandleOp"
    assert graph.get_tensor_by_name("overflow_status_reduce_all:0").dtype == tf.bool
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(train_op)
        summary = v1.Summary.FromString(sess.run(merged))
        assert {v.tag: v.simple_value for v in summary.value} == {"loss_scale": 512.0, "loss_scale_skipped_steps": 0.0}


SESS_RUN_LOSS_SCALE_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
global_step = tf.train.get_or_create_global_step()
with tf.name_scope("rmsprop"):  # Hourglass_ID0155's hourglass_tiny.py
    loss_scale_manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 10, incr_every_n_steps=2,
                                                           decr_every_n_nan_or_inf=2, decr_ratio=0.5)
optimizer = NPULossScaleOptimizer(tf.train.RMSPropOptimizer(0.01), loss_scale_manager)
train_op = optimizer.minimize(loss, global_step=global_step)
lossScale = tf.get_default_graph().get_tensor_by_name("rmsprop/loss_scale:0")
overflow_status_reduce_all = tf.get_default_graph().get_tensor_by_name("overflow_status_reduce_all:0")
step_tensor = tf.get_default_graph().get_tensor_by_name("global_step:0")
next_step = step_tensor + 1  # a TF 1 ref variable's value: arithmetic works
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(4):
        sess.run(train_op, {x: np.ones([4, 3], np.float32)})
    l_s, overflow, step, following = sess.run([lossScale, overflow_status_reduce_all, "global_step:0", next_step],
                                              {x: np.ones([4, 3], np.float32)})
    print("by_name", float(l_s), bool(overflow), int(step), int(following), sess.run("rmsprop/loss_scale:0"))
'''


def test_a_sess_run_script_fetching_loss_scale_overflow_and_global_step_by_name_gets_their_values(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(SESS_RUN_LOSS_SCALE_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # 4 finite steps with incr_every_n_steps=2: 1024 -> 4096; global_step:0 is the step, + 1 works
    assert "by_name 4096.0 True 4 5 4096.0" in done.stdout, done.stdout[-2000:]


PRIVATE_PATHS_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf
from tensorflow.python.util import nest
from tensorflow.python.ops import control_flow_ops, rnn_cell_impl, variable_scope, gen_nn_ops
from tensorflow.python import pywrap_tensorflow
from tensorflow.python.framework import ops
from tensorflow.python.eager import profiler  # official-models keras_utils, at module level
from tensorflow.python.distribute import distribution_strategy_context
from tensorflow.python.tpu import tpu_config
from tensorflow.tools.graph_transforms import TransformGraph  # EDSR_ID1263's run.py, for its .pb export
from tensorflow.contrib.framework.python.ops import audio_ops as contrib_audio  # DS-CNN_RT2's input_data.py

print("nest", nest.is_sequence([1, 2]), nest.is_sequence(3))
x = tf.placeholder(tf.float32, [])
y = control_flow_ops.cond(x > 0, lambda: x * 2, lambda: x - 1)
_, total = control_flow_ops.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t + x), (0, 0.0))
check = control_flow_ops.Assert(x > -100, [x])
v = variable_scope.variable(1.5, name="v")
saver = tf.train.Saver([v])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("flow", *[float(value) for value in sess.run([y, total], {x: 2.0})], sess.run(y, {x: -2.0}))
    path = saver.save(sess, "./ckpt/model")
reader = pywrap_tensorflow.NewCheckpointReader(path)
print("reader", reader.get_tensor("v"))
wav = contrib_audio.decode_wav(contrib_audio.encode_wav(tf.zeros([160, 1]), 16000), desired_channels=1,
                               desired_samples=160)
spectrogram = contrib_audio.audio_spectrogram(wav.audio, window_size=64, stride=32, magnitude_squared=True)
mfcc = contrib_audio.mfcc(spectrogram, wav.sample_rate, dct_coefficient_count=10)
with tf.Session() as sess:
    print("audio", sess.run(tf.shape(wav.audio)).tolist(), sess.run(tf.shape(mfcc))[-1])
print("rnncell", rnn_cell_impl._like_rnncell(tf.nn.rnn_cell.BasicLSTMCell(4)), rnn_cell_impl._like_rnncell(3))
print("moved", callable(gen_nn_ops._max_pool_grad), callable(ops.register_tensor_conversion_function),
      callable(profiler.start), distribution_strategy_context.has_strategy(), tpu_config.RunConfig.__name__)
try:
    from tensorflow.python.training.checkpointable import base  # gone (TF 1.13's; now trackable)
except ModuleNotFoundError as error:
    print("gone", error.name, "TensorFlow 1.15" in str(error))
try:
    TransformGraph(tf.GraphDef(), ["x"], ["y"], ["sort_by_execution_order"])
except NotImplementedError as error:
    print("transform", "extract_sub_graph" in str(error))
'''


def test_tf115_private_paths_modelzoo_imports_are_there_or_a_clear_error(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(PRIVATE_PATHS_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "nest True False" in out
    assert "flow 4.0 6.0 -3.0" in out
    assert "reader 1.5" in out
    assert "audio [160, 1] 10" in out
    assert "rnncell True False" in out
    assert "moved True True True False RunConfig" in out
    assert "gone tensorflow.python.training.checkpointable True" in out
    assert "transform True" in out


MOMENTS_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf


class BatchNormalization(tf.layers.BatchNormalization):
    """Cross-replica batch norm as official-models / EfficientNet write it (TF 1.15's _moments signature)."""

    def __init__(self, fused=False, **kwargs):
        self.calls = 0
        super(BatchNormalization, self).__init__(fused=fused, **kwargs)

    def _moments(self, inputs, reduction_axes, keep_dims):
        self.calls += 1
        shard_mean, shard_variance = super(BatchNormalization, self)._moments(
            inputs, reduction_axes, keep_dims=keep_dims)
        return shard_mean, shard_variance


x = tf.placeholder(tf.float32, [None, 3])
layer = BatchNormalization(momentum=0.5)
y = layer(x, training=True)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    out = sess.run(y, {x: np.arange(12, dtype=np.float32).reshape(4, 3)})
print("moments", layer.calls, np.allclose(out.mean(axis=0), 0, atol=1e-5), np.allclose(out.std(axis=0), 1, atol=1e-2))
'''


def test_a_batch_norm_subclass_overriding_tf115_moments_is_called_without_mask(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(MOMENTS_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "moments 1 True True" in done.stdout


DETERMINISM_SCRIPT = '''\
from npu_bridge.npu_init import *
import os
import random
import numpy as np
import tensorflow as tf
from tfdeterminism import patch

seed = 1627543871  # kernelNet_ID0305's kernelNet_ml1m.py
patch()
os.environ['PYTHONHASHSEED'] = str(seed)
random.seed(seed)
np.random.seed(seed)
tf.set_random_seed(seed)
from tensorflow.python.framework import config

w = tf.get_variable("w", [4], initializer=tf.random_normal_initializer())
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("determinism", config.is_op_determinism_enabled(), sess.run(w).shape)
'''


def test_tfdeterminism_patch_is_tensorflows_op_determinism(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(DETERMINISM_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "determinism True (4,)" in done.stdout


def _layers_model_fn(kind):
    def model_fn(features, labels, mode):
        if kind == "keras":  # TensorFlow 2.21's tf.keras (Keras 3)
            import keras

            logits = keras.layers.Dense(2)(keras.layers.Dense(4, activation="relu")(features["x"]))
        elif kind == "tf-keras":  # a TF 1 script's tf.keras under npurun run
            import tf_keras

            logits = tf_keras.layers.Dense(2)(tf_keras.layers.Dense(4, activation="relu")(features["x"]))
        else:  # tf.compat.v1.layers as npurun gives them (tf-keras's TF 1 layers)
            from npurun.tf1 import layers

            logits = layers.dense(layers.dense(features["x"], 4, activation=tf.nn.relu), 2)
        if mode == "infer":
            return EstimatorSpec(mode, predictions={"logits": logits})
        loss = v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


@pytest.mark.parametrize("kind", ["keras", "tf-keras", "tf.compat.v1.layers"])
def test_variable_names_do_not_depend_on_the_device_loop(tmp_path, control_flow, kind):
    def estimator(iterations_per_loop):
        config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=iterations_per_loop,
                              save_checkpoints_steps=100, log_step_count_steps=None)
        return NPUEstimator(_layers_model_fn(kind), config=config)

    estimator(1).train(_input_fn, max_steps=10)
    names = set(estimator(1).get_variable_names())
    looped = estimator(10)
    looped.train(_input_fn, max_steps=20)  # restores the one-step checkpoint, trains in a loop of 10
    assert set(looped.get_variable_names()) == names
    assert not [name for name in names if "npurun_device_loop" in name]
    assert looped.evaluate(_input_fn, steps=2)["global_step"] == 20  # restores the looped checkpoint
    prediction = next(iter(looped.predict(lambda: _input_fn().map(lambda f, _: f))))
    assert prediction["logits"].shape == (2,)


def test_a_checkpoint_that_does_not_restore_says_why(tmp_path, caplog):
    import logging

    config = NPURunConfig(model_dir=str(tmp_path), save_checkpoints_steps=100, log_step_count_steps=None)
    NPUEstimator(_layers_model_fn("tf.compat.v1.layers"), config=config).train(_input_fn, max_steps=2)

    def renamed(features, labels, mode):
        with v1.variable_scope("other"):
            return _layers_model_fn("tf.compat.v1.layers")(features, labels, mode)

    with caplog.at_level(logging.WARNING, logger="npurun"), pytest.raises(RuntimeError, match="restores"):
        NPUEstimator(renamed, config=config).evaluate(_input_fn, steps=1)
    warned = [r.getMessage() for r in caplog.records if "does not restore" in r.getMessage()]
    assert warned and all("not found in checkpoint" in message for message in warned), warned
    assert not [message for message in warned if message.rstrip(")").rstrip().endswith("Original error:")]


def test_check_knows_the_tf115_paths_the_tf1_world_puts_back():
    from npurun.tools.check.tensorflow import TF1_WORLD, classify

    for path in ("tensorflow.tools.graph_transforms.TransformGraph", "tensorflow.python.eager.profiler",
                 "tensorflow.python.tpu.tpu_config.RunConfig"):
        status, detail, error = classify(path, world=True)
        assert status == TF1_WORLD and not error, (path, detail)
