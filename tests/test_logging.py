"""Progress for library users: npurun's INFO lines appear when the user raised TensorFlow's or
absl's verbosity to INFO, or called npurun.enable_logging(); not otherwise."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""\
    import sys
    import numpy as np
    import tensorflow as tf
    {setup}
    import npurun
    from npurun import EstimatorSpec, NPUEstimator, NPURunConfig
    {after_import}
    v1 = tf.compat.v1

    def input_fn():
        x = np.arange(32, dtype=np.float32).reshape(16, 2) / 32
        return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).repeat().batch(4)

    def model_fn(features, labels, mode):
        w = v1.get_variable("w", [2, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = NPURunConfig(model_dir=sys.argv[1], log_step_count_steps=2, save_checkpoints_steps=4)
    NPUEstimator(model_fn, config=config).train(input_fn, max_steps=4)
    """)


def run(tmp_path, setup="", after_import=""):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(setup=setup, after_import=after_import))
    env = {k: v for k, v in os.environ.items() if k not in ("NPURUN_VERBOSE",)}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "model")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
def test_no_npurun_info_lines_by_default(tmp_path):
    err = run(tmp_path)
    assert "Loss for final step" not in err and "loss = " not in err


@pytest.mark.slow
def test_tensorflow_verbosity_info_shows_npurun_progress(tmp_path):
    err = run(tmp_path, setup="tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)")
    assert "INFO:npurun:Loss for final step 4" in err
    assert "INFO:npurun:loss = " in err and "step = 2" in err  # every log_step_count_steps
    assert "INFO:npurun:Saving checkpoint for step 4" in err
    assert "\r" not in err  # stderr is a pipe here: no progress line redrawn in place, plain log lines


@pytest.mark.slow
def test_absl_verbosity_info_shows_npurun_progress(tmp_path):
    err = run(tmp_path, setup="from absl import logging as absl_logging\n"
                              "absl_logging.set_verbosity(absl_logging.INFO)")
    assert "Loss for final step 4" in err


@pytest.mark.slow
def test_enable_logging_shows_npurun_progress(tmp_path):
    err = run(tmp_path, after_import="npurun.enable_logging()")
    assert " npurun INFO Loss for final step 4" in err
    assert err.count("Loss for final step 4") == 1  # shown once, not also through TensorFlow's handler


def test_a_users_own_logging_configuration_wins(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="npurun"):
        logging.getLogger("npurun").info("a progress line")
    assert [r.getMessage() for r in caplog.records] == ["a progress line"]
