"""Issue 23's seed-2028 sample, part B: gaps its real scripts hit, each in the style of the script that hit it."""
import pytest

AUTOTUNE_SCRIPT = '''\
import os

from npu_bridge.npu_init import *
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

# WaveGlow_ID0024's train.py: its launch script exports FLAG_AUTOTUNE="" (no tuning) and the script copies
# the variable into the NpuOptimizer's auto_tune_mode.
config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
custom_op.parameter_map["auto_tune_mode"].s = tf.compat.as_bytes(os.getenv("FLAG_AUTOTUNE"))
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
sess = tf.Session(config=config)
x = tf.placeholder(tf.float32, [None, 2])
total = tf.reduce_sum(x * 3.0)
print("autotune_off", sess.run(total, feed_dict={x: [[1.0, 2.0]]}))
'''


@pytest.fixture(scope="module")
def autotune_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("sample_f_b")
    (folder / "train.py").write_text(AUTOTUNE_SCRIPT)
    return run_compat("run", folder / "train.py", cwd=folder, env={"FLAG_AUTOTUNE": ""})


def test_an_empty_auto_tune_mode_in_the_session_config_means_no_tuning(autotune_run):
    assert autotune_run.returncode == 0, autotune_run.stderr[-3000:]
    assert "autotune_off 9.0" in autotune_run.stdout, autotune_run.stdout[-2000:]


def test_a_bad_auto_tune_mode_is_still_refused():
    from npurun import NPURunConfig
    from npurun.config.errors import OptionValueError

    assert NPURunConfig(auto_tune_mode="").auto_tune_mode == ""
    with pytest.raises(OptionValueError, match="auto_tune_mode"):
        NPURunConfig(auto_tune_mode="GA, ")


def test_scipy_optimizer_interface_minimises_a_kernelnet_style_loss_with_l_bfgs_b():
    # kernetNet_ID0305's kernelNet_ml1m.py: an L-BFGS-B run of `maxiter` steps per `minimize(sess, feed_dict=...)`
    # over a masked reconstruction loss plus an L2 regulariser; the variables hold the optimum afterwards
    import numpy as np
    import tensorflow as tf

    from npurun.tf1.contrib import scipy_optimizer

    v1 = tf.compat.v1
    rng = np.random.RandomState(0)
    ratings = rng.randint(1, 6, size=(12, 8)).astype(np.float32)
    mask = (rng.rand(12, 8) > 0.3).astype(np.float32)
    with tf.Graph().as_default():
        R = v1.placeholder("float", [None, 8])
        W = v1.get_variable("W", [8, 4], initializer=v1.random_normal_initializer(stddev=0.1))
        b = v1.get_variable("b", [8], initializer=v1.zeros_initializer())
        prediction = tf.matmul(tf.nn.sigmoid(tf.matmul(R, W)), tf.transpose(W)) + b
        loss = tf.nn.l2_loss(mask * (R - prediction)) + 0.01 * tf.nn.l2_loss(W)
        optimizer = scipy_optimizer.ScipyOptimizerInterface(
            loss, options={"maxiter": 30, "disp": False, "maxcor": 10}, method="L-BFGS-B")
        seen = []
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            before = sess.run(loss, {R: ratings})
            optimizer.minimize(sess, feed_dict={R: ratings}, fetches=[loss], loss_callback=seen.append)
            after = sess.run(loss, {R: ratings})
            optimizer.minimize(sess, feed_dict={R: ratings})  # a second call continues from the optimum
            again = sess.run(loss, {R: ratings})
    assert after < 0.5 * before and again <= after + 1e-4
    assert len(seen) >= 10 and min(seen) == pytest.approx(after, rel=1e-5)  # the loss of each evaluation


def test_scipy_optimizer_interface_honours_bounds_and_constraints():
    import numpy as np
    import tensorflow as tf

    from npurun.tf1.contrib import scipy_optimizer

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        x = v1.get_variable("x", initializer=np.array([2.0, 2.0], np.float32))
        loss = tf.reduce_sum(tf.square(x - np.array([3.0, -1.0], np.float32)))
        bounded = scipy_optimizer.ScipyOptimizerInterface(loss, var_to_bounds={x: (0.0, 2.5)})
        # TF 1.15's docstring example: minimise x^2 + y^2 subject to x + y = 1 (SLSQP)
        constrained = scipy_optimizer.ScipyOptimizerInterface(tf.reduce_sum(tf.square(x)), equalities=[x[0] + x[1] - 1.0],
                                                              method="SLSQP")
        with v1.Session() as sess:
            sess.run(x.initializer)
            bounded.minimize(sess)
            np.testing.assert_allclose(sess.run(x), [2.5, 0.0], atol=1e-5)
            constrained.minimize(sess)
            np.testing.assert_allclose(sess.run(x), [0.5, 0.5], atol=1e-4)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="No variables"):
        scipy_optimizer.ScipyOptimizerInterface(tf.constant(1.0))
