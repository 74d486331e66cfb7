"""The fourth random sample (seed 2032), its last two folders: gaps their real scripts hit, each in the style of
the script that hit it; each test failed before its fix."""

import pytest

# META-SGD_ID1236's maml.py (and MAML_ID0755, MASF_ID1191, MT-NET_ID1283): a per-task accuracy from contrib's
# non-streaming `tf.contrib.metrics.accuracy(predictions, labels)`, stacked over the meta-batch and averaged in
# the same run that trains, with only the global variables initialized. Also contrib's predictions-first
# streaming_precision, whose swapped order would give the recall.
CONTRIB_ACCURACY_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf

meta_batch_size = 3
inputa = tf.placeholder(tf.float32, [meta_batch_size, 4, 6])
labela = tf.placeholder(tf.float32, [meta_batch_size, 4, 2])
weights = tf.get_variable("w", [6, 2], initializer=tf.zeros_initializer())


def task_metalearn(inp):
    x, y = inp
    output = tf.matmul(x, weights)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=output, labels=y))
    task_accuracy = tf.contrib.metrics.accuracy(tf.argmax(tf.nn.softmax(output), 1), tf.argmax(y, 1))
    return loss, task_accuracy


losses, accuracies = [], []
for i in range(meta_batch_size):
    loss, acc = task_metalearn((inputa[i], labela[i]))
    losses.append(loss)
    accuracies.append(acc)
total_loss = tf.reduce_sum(tf.stack(losses)) / tf.to_float(meta_batch_size)
total_accuracy = tf.reduce_sum(tf.stack(accuracies)) / tf.to_float(meta_batch_size)
train_op = tf.train.AdamOptimizer(0.001).minimize(total_loss)
weighted = tf.contrib.metrics.accuracy(tf.constant([1, 0, 1, 1]), tf.constant([1, 1, 1, 0]),
                                       weights=tf.constant([1.0, 1.0, 2.0, 0.0]))
precision, precision_update = tf.contrib.metrics.streaming_precision(
    tf.constant([True, True, True, False]), tf.constant([True, False, False, True]))

# labels: class 1 everywhere; the zero-initialized model predicts class 0 (argmax of a tie), so accuracy 0,
# except task 2 whose labels are class 0 at two of four positions.
x = np.ones([meta_batch_size, 4, 6], np.float32)
y = np.tile(np.array([0.0, 1.0], np.float32), [meta_batch_size, 4, 1])
y[2, :2] = [1.0, 0.0]
sess = tf.InteractiveSession(config=npu_config_proto())
tf.global_variables_initializer().run()
result = sess.run([total_loss, total_accuracy, accuracies[2]], {inputa: x, labela: y})
sess.run(train_op, {inputa: x, labela: y})
sess.run(tf.local_variables_initializer())
sess.run(precision_update)
print("accuracy", round(float(result[1]), 4), "task 2", float(result[2]), "weighted", float(sess.run(weighted)),
      "precision", float(sess.run(precision)), "shape", accuracies[0].shape.as_list())
'''


@pytest.fixture(scope="module")
def contrib_accuracy_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("contrib_accuracy")
    (tmp_path / "maml.py").write_text(CONTRIB_ACCURACY_SCRIPT)
    return run_compat("run", tmp_path / "maml.py", cwd=tmp_path)


def test_contrib_metrics_accuracy_is_a_plain_tensor(contrib_accuracy_run):
    assert contrib_accuracy_run.returncode == 0, contrib_accuracy_run.stderr[-3000:]
    # (0 + 0 + 0.5) / 3; weighted: positions 0 and 2 right (weights 1 and 2) of weights 4; precision: 1 of 3
    assert "accuracy 0.1667 task 2 0.5 weighted 0.75 precision 0.3333333432674408 shape []" in \
        contrib_accuracy_run.stdout, contrib_accuracy_run.stdout[-2000:]
