"""Issue 23's third random sample (seed 2028), part C and the late re-runs: gaps their real scripts hit, each in
the style of the script that hit it (docs/compat.md, "Third random sample (seed 2028)"); each test failed before
its fix.
"""
import pytest

# WaveGlow_ID0024's / ID0317's glow.py: the mel local conditions upsampled to the audio's length by two
# transposed 1-D convolutions, `tf.contrib.nn.conv1d_transpose(..., strides=)` (TF 1.15's is tf.nn's; 2 folders).
CONV1D_TRANSPOSE_SCRIPT = '''\
import numpy as np
import tensorflow as tf


def create_variable(name, shape):
    return tf.get_variable(name, shape=shape, initializer=tf.glorot_uniform_initializer(seed=1))


def upsample_lc(lc_batch, channels=6, stride1=4, stride2=2):
    with tf.variable_scope("upsample"):
        lc_shape = tf.shape(lc_batch)
        batch_size, lc_length, input_lc_dim = lc_shape[0], lc_shape[1], 5
        filter1 = create_variable("layer1", [3, channels, input_lc_dim])
        output_shape = [batch_size, lc_length * stride1, channels]
        lc_batch = tf.nn.relu(tf.contrib.nn.conv1d_transpose(lc_batch, filter1, output_shape, strides=stride1))
        lc_shape = tf.shape(lc_batch)
        filter2 = create_variable("layer2", [3, channels, channels])
        output_shape = [lc_shape[0], lc_shape[1] * stride2, channels]
        lc_batch = tf.contrib.nn.conv1d_transpose(lc_batch, filter2, output_shape, strides=stride2, padding="SAME")
        return tf.nn.relu(lc_batch)


lc = tf.placeholder(tf.float32, [None, None, 5])
upsampled = upsample_lc(lc)
loss = tf.reduce_mean(tf.square(upsampled - 1.0))
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    value, _ = sess.run([upsampled, train_op], {lc: np.random.rand(2, 7, 5).astype(np.float32)})
print("upsampled", value.shape)
'''


@pytest.fixture(scope="module")
def conv1d_transpose_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("waveglow")
    (folder / "glow.py").write_text(CONV1D_TRANSPOSE_SCRIPT)
    return run_compat("run", folder / "glow.py", cwd=folder), run_compat("check", folder / "glow.py", cwd=folder)


def test_contrib_nn_conv1d_transpose(conv1d_transpose_run):
    done, _ = conv1d_transpose_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert "upsampled (2, 56, 6)" in done.stdout, done.stdout[-2000:]


def test_check_knows_contrib_nn_conv1d_transpose(conv1d_transpose_run):
    _, check = conv1d_transpose_run
    assert "tensorflow.contrib.nn.conv1d_transpose -- provided" in check.stdout, check.stdout[-2000:]
    assert "0 will raise" in check.stdout, check.stdout[-2000:]


# UNet_Industrial_ID0007's runtime/runner.py (NVIDIA's UNet scripts, 8 folders): hooks "disabled" by a float step
# count, `log_step_count_steps=1e9` / `save_summary_steps=1e9`, which tf.estimator.RunConfig took (any number > 0).
WHOLE_FLOAT_STEPS_SCRIPT = '''\
import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator


def get_run_config(mode, model_dir):
    config = NPURunConfig(
        model_dir=model_dir,
        precision_mode="allow_mix_precision",
        save_summary_steps=10 if mode == "train" else 1e9,
        save_checkpoints_steps=None,
        save_checkpoints_secs=None,
        keep_checkpoint_max=5,
        keep_checkpoint_every_n_hours=1e6,
        log_step_count_steps=1e9,
        iterations_per_loop=1,
    )
    if mode == "train":
        config = config.replace(save_checkpoints_steps=1000, keep_checkpoint_every_n_hours=3)
    return config


def model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features, 1)
    loss = tf.losses.mean_squared_error(labels, logits)
    train_op = tf.train.RMSPropOptimizer(1e-3).minimize(loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
    data = np.random.rand(8, 3).astype(np.float32), np.random.rand(8, 1).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(data).repeat().batch(2, drop_remainder=True)


for mode in ("train", "validation"):
    config = get_run_config(mode, "results/checkpoints")
    print(mode, config.save_summary_steps, config.log_step_count_steps)
NPUEstimator(model_fn=model_fn, config=get_run_config("train", "results/checkpoints")).train(input_fn, steps=4)
print("trained")
'''


@pytest.fixture(scope="module")
def whole_float_steps_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("unet_industrial")
    (folder / "runner.py").write_text(WHOLE_FLOAT_STEPS_SCRIPT)
    return run_compat("run", folder / "runner.py", cwd=folder), run_compat("check", folder / "runner.py", cwd=folder)


def test_run_config_whole_float_step_counts(whole_float_steps_run):
    done, _ = whole_float_steps_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert "train 10 1000000000" in done.stdout and "validation 1000000000 1000000000" in done.stdout, done.stdout
    assert "trained" in done.stdout, done.stdout[-2000:]


def test_check_takes_whole_float_step_counts(whole_float_steps_run):
    _, check = whole_float_steps_run
    assert "log_step_count_steps=1000000000.0 -- effect: INFO log lines" in check.stdout, check.stdout[-3000:]
    assert "invalid value" not in check.stdout and "0 will raise" in check.stdout, check.stdout[-3000:]


def test_fractional_step_count_still_refused():
    from npurun import NPURunConfig
    from npurun.config.errors import OptionValueError

    with pytest.raises(OptionValueError, match="log_step_count_steps.*2.5.*float with no fraction"):
        NPURunConfig(log_step_count_steps=2.5)


# UNet_Industrial_ID0007's model/unet.py and utils/hooks/profiler_hook.py: model_fn names the trainable parameter
# count, and a hook fetches it by name in after_create_session, with NPURunConfig(iterations_per_loop=10): on
# Ascend model_fn's graph is fetchable as written; here model_fn is in the device loop's body.
AFTER_CREATE_SESSION_SCRIPT = '''\
import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator


class ProfilerHook(tf.train.SessionRunHook):
    def begin(self):
        self._saver = tf.train.Saver()

    def after_create_session(self, session, coord):
        params_count = tf.get_default_graph().get_tensor_by_name("trainable_parameters_count_ref:0")
        _params_count = session.run(params_count)
        print("# Total Trainable Parameters:", int(_params_count))
        print("step at start", session.run(tf.train.get_global_step()))

    def before_run(self, run_context):
        graph = tf.get_default_graph()
        fetches = {"total_loss": graph.get_tensor_by_name("losses/total_loss_ref:0"), "iou_scores": {}}
        for threshold in [0.25, 0.5]:
            fetches["iou_scores"][str(threshold)] = graph.get_tensor_by_name(
                "IoU_Metrics/iou_score_ths_%s_ref:0" % threshold)
        return tf.train.SessionRunArgs(fetches=fetches)

    def after_run(self, run_context, run_values):
        results = run_values.results
        print("total_loss ok", results["total_loss"] > 0, sorted(results["iou_scores"]),
              results["iou_scores"]["0.25"] <= results["iou_scores"]["0.5"] + 1.0)

    def end(self, session):
        print("# at end:", int(session.run("trainable_parameters_count_ref:0")))
        print("saved", self._saver.save(session, "results/at_end.ckpt"))


def model_fn(features, labels, mode, params):
    with tf.device("/gpu:0"):
        tf.identity(features, name="input_image_ref")
        logits = tf.layers.conv2d(features, 2, 3, padding="same")
        logits = tf.layers.conv2d(logits, 1, 1)
        all_trainable_vars = tf.reduce_sum([tf.reduce_prod(v.shape) for v in tf.trainable_variables()])
        tf.identity(all_trainable_vars, name="trainable_parameters_count_ref")
        with tf.name_scope("IoU_Metrics"):
            for threshold in [0.25, 0.5]:
                predicted = tf.cast(tf.sigmoid(logits) > threshold, tf.float32)
                union = tf.reduce_sum(tf.maximum(predicted, labels)) + 1e-9
                tf.identity(tf.reduce_sum(predicted * labels) / union, name="iou_score_ths_%s_ref" % threshold)
        with tf.name_scope("losses"):
            loss = tf.identity(tf.losses.sigmoid_cross_entropy(labels, logits), name="total_loss_ref")
        optimizer = tf.train.RMSPropOptimizer(1e-3, decay=0.9, momentum=0.8)
        train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[ProfilerHook()])


def input_fn():
    images = np.random.rand(8, 16, 16, 1).astype(np.float32)
    masks = (np.random.rand(8, 16, 16, 1) > 0.5).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((images, masks)).repeat().batch(2, drop_remainder=True)


config = NPURunConfig(model_dir="results/checkpoints", iterations_per_loop=2, save_checkpoints_steps=None,
                      save_checkpoints_secs=None, log_step_count_steps=1e9)
NPUEstimator(model_fn=model_fn, config=config).train(input_fn, steps=4)
print("trained")
'''


def test_hooks_fetch_model_fn_tensors_by_name_from_the_device_loop(tmp_path):
    from .conftest import run_compat

    (tmp_path / "main.py").write_text(AFTER_CREATE_SESSION_SCRIPT)
    done = run_compat("run", tmp_path / "main.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # conv 3x3x1x2 + 2 biases, conv 1x1x2x1 + 1 bias
    assert "# Total Trainable Parameters: 23" in done.stdout, done.stdout[-2000:]
    assert "step at start 0" in done.stdout and "# at end: 23" in done.stdout, done.stdout[-2000:]
    assert "saved results/at_end.ckpt" in done.stdout, done.stdout[-2000:]
    # before_run's fetches by name of model_fn's scoped tensors: the last iteration's values, as on Ascend
    assert done.stdout.count("total_loss ok True ['0.25', '0.5'] True") == 2, done.stdout[-2000:]
    assert "trained" in done.stdout, done.stdout[-2000:]


# EDVR_ID0056's tools/main.py, run from the model folder (`cd $cur_path/../; python3 tools/main.py ...`): it puts
# '.' on sys.path and imports its packages from there (`ascendcv.utils.misc`, whose set_global_random_seed calls
# tf.set_random_seed); nothing next to tools/main.py is TensorFlow 1 code. Its modules decide the TF 1 world too.
CWD_PACKAGE_ENTRY = '''\
import os
import sys

sys.path.append('.')

from vsrlib.utils.misc import set_global_random_seed
from vsrlib.models import build_model

if __name__ == '__main__':
    set_global_random_seed(2)
    print("model", build_model())
'''
CWD_PACKAGE_MISC = '''\
import random
import numpy as np
import tensorflow as tf


def set_global_random_seed(seed):
    np.random.seed(seed)
    random.seed(seed)
    tf.set_random_seed(seed)
'''
CWD_PACKAGE_MODELS = '''\
import tensorflow as tf


def build_model():
    lr = tf.placeholder(tf.float32, [1, 4, 4, 3], name="L_input")
    sr = tf.layers.conv2d(lr, 3, 3, padding="same")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(sr, {lr: [[[[0.5] * 3] * 4] * 4]}).shape
'''


def test_entry_in_a_subfolder_importing_packages_from_the_current_folder(tmp_path):
    from .conftest import run_compat

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "main.py").write_text(CWD_PACKAGE_ENTRY)
    for folder in ("vsrlib", "vsrlib/utils", "vsrlib/models"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "vsrlib" / "utils" / "misc.py").write_text(CWD_PACKAGE_MISC)
    (tmp_path / "vsrlib" / "models" / "__init__.py").write_text(CWD_PACKAGE_MODELS)
    (tmp_path / "README.md").write_text("a model folder\n")
    done = run_compat("run", "tools/main.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "model (1, 4, 4, 3)" in done.stdout, done.stdout[-2000:]
