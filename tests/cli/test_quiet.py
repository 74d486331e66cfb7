"""Quiet by default: what `npurun train`, `npurun run` and `npurun launch` print on stderr.

Each command runs in a fresh process with no TF_CPP_MIN_LOG_LEVEL / NPURUN_VERBOSE of the test
environment, so TensorFlow's start-up banner (printed by native code before any log setting is
read) would appear if npurun did not hold it back.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPURUN = [sys.executable, "-m", "npurun.cli"]

# npurun's own lines: the CLI's log format, the plain "LEVEL:npurun:" format, notes and npurun's messages.
NPURUN_LINE = re.compile(r"^(\d{4}-\d\d-\d\d [\d:,]+ npurun(\.\S+)? (INFO|WARNING) |(INFO|WARNING):npurun(\.\S+)?:"
                         r"|note: |npurun( \w+)?: )")
# Real warnings these runs may print, by name.
NAMED_WARNINGS = (
    # float16 forced on a CPU without AVX512-FP16: TensorFlow says it falls back to Eigen kernels
    "oneDNN supports DT_HALF only on platforms with AVX-512",
)


def quiet_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "NPURUN_VERBOSE", "NPURUN_DEBUG", "RANK_ID", "RANK_SIZE", "TF_CONFIG")}
    env.update(extra)
    return env


def foreign_lines(stderr: str, prefix: str = "") -> list:
    lines = [line[len(prefix):] if line.startswith(prefix) else line for line in stderr.splitlines()]
    return [line for line in lines if line.strip() and not NPURUN_LINE.match(line)
            and not any(name in line for name in NAMED_WARNINGS)]


@pytest.mark.slow
def test_train_prints_only_npurun_lines(tmp_path):
    done = subprocess.run([*NPURUN, "train", "--steps", "4", "--model-dir", str(tmp_path / "m")],
                          capture_output=True, text=True, env=quiet_env(), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Loss for final step 4" in done.stderr  # npurun's own progress is there
    assert foreign_lines(done.stderr) == []


@pytest.mark.slow
def test_train_under_mixed_precision_prints_only_npurun_lines(tmp_path):
    done = subprocess.run([*NPURUN, "train", "--steps", "2", "--model-dir", str(tmp_path / "m"),
                           "--set", "precision_mode=allow_mix_precision"], capture_output=True, text=True,
                          env=quiet_env(NPURUN_FORCE_LOW_PRECISION="1"), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "auto_mixed_precision" not in done.stderr
    assert foreign_lines(done.stderr) == []


@pytest.mark.slow
def test_verbose_shows_tensorflows_own_lines(tmp_path):
    done = subprocess.run([*NPURUN, "-v", "train", "--steps", "1", "--model-dir", str(tmp_path / "m")],
                          capture_output=True, text=True, env=quiet_env(), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^[IW]\d{4} ", done.stderr, re.M), done.stderr  # TensorFlow's native log lines


@pytest.mark.slow
def test_run_of_a_corpus_script_prints_only_npurun_lines(tmp_path):
    script = ROOT / "tests" / "compat" / "scripts" / "classic_estimator.py"
    done = subprocess.run([*NPURUN, "run", str(script), "--model_dir", str(tmp_path / "m"), "--steps", "20"],
                          capture_output=True, text=True, env=quiet_env(), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("accuracy ")
    assert "INFO:npurun:" in done.stderr  # npurun's progress log is shown under `npurun run`
    assert foreign_lines(done.stderr) == []


@pytest.mark.slow
def test_launch_of_two_ranks_prints_only_npurun_lines(tmp_path):
    script = ROOT / "tests" / "distribute" / "scripts" / "estimator_train.py"
    done = subprocess.run([*NPURUN, "launch", "-n", "2", str(script), str(tmp_path / "out"), "1", "4", "16"],
                          capture_output=True, text=True, env=quiet_env(), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):
        assert f"[rank {rank}] rank {rank} done" in done.stdout
    assert foreign_lines(re.sub(r"(?m)^\[rank \d\] ", "", done.stderr)) == []


LIBRARY_SCRIPT = """\
import sys, numpy as np, tensorflow as tf
from npurun import EstimatorSpec, NPUEstimator, NPURunConfig, ModeKeys
from npurun.precision import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer
from npurun.estimator import build_raw_serving_input_receiver_fn
v1 = tf.compat.v1
def input_fn():
    x = np.linspace(0, 1, 32, dtype=np.float32).reshape(16, 2)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, x.sum(axis=1, keepdims=True))).repeat().batch(4)
def model_fn(features, labels, mode):
    y = tf.matmul(features["x"], v1.get_variable("w", [2, 1]))
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"y": y})
    loss = tf.reduce_mean(tf.square(y - labels))
    opt = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(0.1),
                                ExponentialUpdateLossScaleManager(2.0 ** 10, 100))
    return EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, global_step=v1.train.get_global_step()))
est = NPUEstimator(model_fn, config=NPURunConfig(model_dir=sys.argv[1], save_checkpoints_steps=5))
est.train(input_fn, max_steps=10)
est.export_saved_model(sys.argv[1] + "/export",
                       build_raw_serving_input_receiver_fn({"x": tf.TensorSpec([None, 2], tf.float32)}))
"""


@pytest.mark.slow
def test_training_and_export_in_a_library_script_raise_no_tensorflow_warning_about_npurun(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(LIBRARY_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "m")], capture_output=True, text=True,
                          env=quiet_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING:tensorflow")
                and not any(name in line for name in NAMED_WARNINGS)]
    # before: make_saveable_from_iterator, build_tensor_info (deprecated) and "Issue encountered when
    # serializing npurun_loss_scale_managers" (a collection of Python objects)
    assert warnings == []


# A Keras-on-session script as ModelZoo writes them (ResNet50_OSME_ID1257's model_resnet50_with_OSME.py):
# tf-keras's graph-mode fit makes TensorFlow print native warnings (an op "changed by setting attribute
# after it was run by a session") and library deprecation notices, and the first device listing happens
# inside the script, not at an npurun call. The script's own lines on stderr, its own deprecated call and
# an unfinished line written just before a hard exit must still get through.
KERAS_SESSION_SCRIPT = """\
from npu_bridge.npu_init import *
import os
import sys
import numpy as np
import tensorflow as tf
from tensorflow.python.keras import backend as K
from keras.layers import BatchNormalization, Dense, Input
from keras.models import Model
from keras.optimizers import SGD

sess_config = tf.ConfigProto()
custom_op = sess_config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
sess = tf.Session(config=sess_config)
K.set_session(sess)
print(tf.config.list_physical_devices("GPU"))
x = tf.placeholder(tf.float32, [None, 4])
with tf.colocate_with(x):  # deprecated: TensorFlow says so, at this line (tf-keras's own later call is not shown)
    y = tf.identity(x)
inputs = Input(shape=(4,))
outputs = Dense(2, activation="softmax")(BatchNormalization()(Dense(8)(inputs)))
model = Model(inputs, outputs)
model.compile(optimizer=SGD(lr=0.01, momentum=0.9), loss="categorical_crossentropy")
model.fit(np.ones((8, 4)), np.eye(2)[np.zeros(8, int)], epochs=2, verbose=0)
print("script line on stderr", file=sys.stderr)
sys.stderr.flush()
os.write(2, b"progress 100%\\r")
os._exit(0)
"""


@pytest.mark.slow
def test_run_of_a_keras_session_script_drops_tensorflows_noise_for_the_whole_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(KERAS_SESSION_SCRIPT)
    done = subprocess.run([*NPURUN, "run", str(script)], capture_output=True, env=quiet_env(), cwd=tmp_path,
                          timeout=300)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert done.stdout.strip() == b"[]"
    assert "script line on stderr\n" in stderr
    assert stderr.endswith("progress 100%\r"), stderr[-300:]  # the unfinished line, after a hard exit
    own = [line for line in foreign_lines(stderr) if "script line" not in line and "progress" not in line]
    # the one deprecation notice at the script's own line, with its two-line explanation; nothing else
    assert len(own) == 3 and own[0].startswith(f"WARNING:tensorflow:From {script}:18: "), own


@pytest.mark.slow
def test_run_on_a_terminal_keeps_stderr_a_terminal_of_the_same_size(tmp_path):
    """The noise filter sits between the script and the terminal; the script still sees a terminal on
    stderr (npurun's progress line, tqdm and coloured logs ask), of the terminal's size."""
    import fcntl
    import struct
    import termios

    script = tmp_path / "tty.py"  # named as a standard module npurun uses here: the script's folder comes first
    script.write_text("from npu_bridge.npu_init import *\nimport os, sys\n"
                      "print('stderr', sys.stderr.isatty(), tuple(os.get_terminal_size(2)), file=sys.stderr)\n")
    reader, writer = os.openpty()
    fcntl.ioctl(writer, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    done = subprocess.run([*NPURUN, "run", str(script)], stdout=subprocess.PIPE, stderr=writer, env=quiet_env(),
                          cwd=tmp_path, timeout=300)
    os.close(writer)
    printed = b""
    while True:
        try:
            chunk = os.read(reader, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not chunk:
            break
        printed += chunk
    os.close(reader)
    assert done.returncode == 0, printed
    assert b"stderr True (101, 33)" in printed, printed
