"""The sixth random sample (seed 2036), folders 3-4: gaps their real scripts hit, each in the style of the
script that hit it; each test failed before its fix."""

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
