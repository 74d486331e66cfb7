"""The sixth random sample (seed 2036), folders 3-4: gaps their real scripts hit, each in the style of the
script that hit it; each test failed before its fix."""

import os
import subprocess
import sys

import pytest

# deeplabv2's Model.test_setup: the network's argmax (int64) and the uint8 ground truth with ignored pixels
# weighted 0, scored by contrib's streaming accuracy / mean IoU and its confusion_matrix, called positionally
# (predictions first, as labels) with num_classes and weights, summed over steps in numpy.
SEGMENTATION_EVAL_SCRIPT = '''\
import numpy as np
import tensorflow as tf

num_classes = 3
pred = tf.placeholder(tf.int64, [None])
label = tf.placeholder(tf.uint8, [None])

temp = tf.less_equal(label, num_classes - 1)
weights = tf.cast(temp, tf.int32)
gt = tf.where(temp, label, tf.cast(temp, tf.uint8))

accu, accu_update_op = tf.contrib.metrics.streaming_accuracy(pred, gt, weights=weights)
mIoU, mIou_update_op = tf.contrib.metrics.streaming_mean_iou(pred, gt, num_classes=num_classes, weights=weights)
confusion = tf.contrib.metrics.confusion_matrix(pred, gt, num_classes=num_classes, weights=weights)

sess = tf.Session()
sess.run(tf.global_variables_initializer())
sess.run(tf.local_variables_initializer())
confusion_matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
steps = [([0, 1, 2, 2, 1], [0, 1, 1, 2, 255]), ([2, 0], [2, 255])]
for p, l in steps:
    _, _, c_matrix = sess.run([accu_update_op, mIou_update_op, confusion], feed_dict={pred: p, label: l})
    confusion_matrix += c_matrix
print("dtype", c_matrix.dtype)
print("confusion", confusion_matrix.tolist())
print("Pixel Accuracy: {:.3f}".format(accu.eval(session=sess)))
print("Mean IoU: {:.3f}".format(mIoU.eval(session=sess)))
'''


@pytest.fixture(scope="module")
def segmentation_eval_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("segmentation_eval")
    (tmp_path / "model.py").write_text(SEGMENTATION_EVAL_SCRIPT)
    return run_compat("run", tmp_path / "model.py", cwd=tmp_path)


def test_contrib_metrics_confusion_matrix_keeps_tf1_positional_order(segmentation_eval_run):
    run = segmentation_eval_run
    assert run.returncode == 0, run.stderr[-3000:]
    # rows are the first argument (the script's predictions), columns the second; weight-0 pixels not counted
    assert "dtype int32" in run.stdout, run.stdout[-2000:]
    assert "confusion [[1, 0, 0], [0, 1, 0], [0, 1, 2]]" in run.stdout, run.stdout[-2000:]
    # 4 of the 5 counted pixels agree; IoU per class 1/1, 1/2, 2/3
    assert "Pixel Accuracy: 0.800" in run.stdout, run.stdout[-2000:]
    assert "Mean IoU: 0.722" in run.stdout, run.stdout[-2000:]


# efficientnet-condconv's main.py: absl flags, app.run and absl logging at INFO (its progress and "Eval results"
# lines), `import tensorflow.compat.v1 as tf`, a TPU-descended input_fn that sets tf.data Options' TF 1.15 names
# (experimental_threading) and a model_fn that sets the Keras learning phase and logs through tf.logging (its
# builder's global_params line) before building its layers, trained by NPUEstimator.
ESTIMATOR_INPUT_OPTIONS_SCRIPT = '''\
from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow.compat.v1 as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec

flags.DEFINE_string("model_dir", None, "model dir")
flags.DEFINE_integer("train_steps", 2, "steps")
FLAGS = flags.FLAGS


def input_fn(params):
    images = np.random.RandomState(0).rand(8, 8, 8, 3).astype(np.float32)
    labels = np.eye(4, dtype=np.float32)[np.arange(8) % 4]
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
    dataset = dataset.batch(params["batch_size"], True).prefetch(tf.data.experimental.AUTOTUNE)
    options = tf.data.Options()
    options.experimental_deterministic = False
    options.experimental_threading.max_intra_op_parallelism = 1
    options.experimental_threading.private_threadpool_size = 2
    return dataset.with_options(options)


def model_fn(features, labels, mode, params):
    is_training = (mode == tf.estimator.ModeKeys.TRAIN)
    tf.keras.backend.set_learning_phase(is_training)
    logging.info("Using open-source implementation.")
    tf.logging.info("global_params= %s", dict(width_coefficient=1.0))
    net = tf.layers.Conv2D(4, 3, padding="same")(features)
    net = tf.layers.BatchNormalization()(net, training=is_training)
    logits = tf.layers.Dense(4)(tf.reduce_mean(net, [1, 2]))
    loss = tf.losses.softmax_cross_entropy(onehot_labels=labels, logits=logits)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, tf.train.get_global_step())
    return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def main(unused_argv):
    logging.set_verbosity(logging.INFO)
    est = NPUEstimator(model_fn=model_fn, config=NPURunConfig(model_dir=FLAGS.model_dir, log_step_count_steps=1),
                       params=dict(batch_size=2))
    logging.info("Training for %d steps.", FLAGS.train_steps)
    est.train(input_fn=input_fn, max_steps=FLAGS.train_steps)
    logging.info("Finished training up to step %d.", FLAGS.train_steps)
    print("learning phase set, trained to", est.get_variable_value("global_step"))


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
'''


def _run_as_a_user(folder, *args):
    """`python -m npurun.compat run ARGS` with the user's environment: no TF_CPP_MIN_LOG_LEVEL (conftest's
    run_compat sets 2: TensorFlow's native WARNING lines, which share the glog header of absl's, are hidden)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TF_CPP_MIN_LOG_LEVEL", "NPURUN_VERBOSE")}
    environment["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, "-m", "npurun.compat", "run", *args], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def estimator_input_options_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("estimator_input_options")
    (tmp_path / "main.py").write_text(ESTIMATOR_INPUT_OPTIONS_SCRIPT)
    return _run_as_a_user(tmp_path, "main.py", "--model_dir=./result")


def test_tf1_data_options_and_learning_phase_run_without_tf2_deprecation_notices(estimator_input_options_run):
    run = estimator_input_options_run
    assert run.returncode == 0, run.stderr[-3000:]
    assert "learning phase set, trained to 2" in run.stdout, run.stdout[-2000:]
    # TF 1.15 gave neither notice: both are TensorFlow 2's about names of the TF 1 API the script uses
    assert "experimental_threading is deprecated" not in run.stderr, run.stderr[-3000:]
    assert "set_learning_phase` is deprecated" not in run.stderr, run.stderr[-3000:]
    assert "loss = " in run.stderr, run.stderr[-3000:]


def test_script_absl_info_lines_are_shown_and_tf_logging_lines_once(estimator_input_options_run):
    run = estimator_input_options_run
    assert run.returncode == 0, run.stderr[-3000:]
    # absl's handler prints them with glog's header, as TensorFlow's C++ INFO lines (hidden by default) have
    for line in ("main.py:44] Training for 2 steps.", "main.py:46] Finished training up to step 2.",
                 "main.py:30] Using open-source implementation."):
        assert line in run.stderr, run.stderr[-3000:]
    # tf.logging's own handler prints its records; absl's root handler does not print them again
    assert run.stderr.count("global_params= {'width_coefficient': 1.0}") == 1, run.stderr[-3000:]
    assert "INFO:tensorflow:global_params= {'width_coefficient': 1.0}" in run.stderr, run.stderr[-3000:]


# deeplabv2's ImageReader and Model.train: a slice_input_producer over the data list, each file read in the graph,
# tf.train.batch, the queue threads started with a Coordinator, a few steps (slower than the readers, so the
# queues are full and their threads wait in enqueue), then request_stop and join.
QUEUE_RUNNER_SCRIPT = '''\
import time
import tensorflow as tf

files = tf.convert_to_tensor(["data/%d.txt" % i for i in range(6)], dtype=tf.string)
labels = tf.convert_to_tensor(list(range(6)), dtype=tf.int32)
queue = tf.train.slice_input_producer([files, labels], shuffle=True)
contents = tf.read_file(queue[0])
image = tf.cast(tf.strings.length(contents), tf.float32) * tf.ones([4, 4, 3])
image_batch, label_batch = tf.train.batch([image, queue[1]], 2)
loss = tf.reduce_mean(image_batch) + tf.reduce_mean(tf.cast(label_batch, tf.float32))

coord = tf.train.Coordinator()
sess = tf.Session()
threads = tf.train.start_queue_runners(coord=coord, sess=sess)
for step in range(3):
    print("step {:d} \\t loss = {:.3f}".format(step, sess.run(loss)))
    time.sleep(0.5)
coord.request_stop()
coord.join(threads)
print("queue threads stopped")
'''


@pytest.fixture(scope="module")
def queue_runner_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("queue_runner")
    (tmp_path / "data").mkdir()
    for i in range(6):
        (tmp_path / "data" / f"{i}.txt").write_text("x" * (i + 1))
    (tmp_path / "main.py").write_text(QUEUE_RUNNER_SCRIPT)
    return _run_as_a_user(tmp_path, "main.py")


def test_queue_runners_stop_without_rendezvous_cancelled_lines(queue_runner_run):
    run = queue_runner_run
    assert run.returncode == 0, run.stderr[-3000:]
    assert "step 2 \t loss = " in run.stdout and "queue threads stopped" in run.stdout, run.stdout[-2000:]
    # the queues' pending enqueues are cancelled when they close; TF 1.15's threads ended silently
    assert "Enqueue operation was cancelled" not in run.stderr, run.stderr[-3000:]
    assert "[[{{node " not in run.stderr, run.stderr[-3000:]
