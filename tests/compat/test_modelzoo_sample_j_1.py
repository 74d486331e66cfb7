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
sess.close()
'''

# BertMNLI_ID1628's run_classifier.py (150 folders call init_from_checkpoint): model_fn initializes the variables
# found in a pretrained checkpoint with `tf.train.init_from_checkpoint`, under NPUEstimator with a device loop of
# 2 steps. The checkpoint is saved from the script's own variables; a learning rate of 0 keeps what was restored.
BERT_INIT_CHECKPOINT_SCRIPT = '''\
import os
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec

init_checkpoint = os.path.abspath("model/bert_model.ckpt")
with tf.Graph().as_default():
    with tf.variable_scope("bert"):
        tf.get_variable("kernel", [4, 3], initializer=tf.constant_initializer(3.0))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        tf.train.Saver().save(s, init_checkpoint)


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
    names = {name for name, _ in tf.train.list_variables(init_checkpoint)}
    assignment_map = {}
    for var in tvars:
        name = var.name.split(":")[0]
        if name in names:
            assignment_map[name] = name
    return assignment_map


def model_fn(features, labels, mode, params):
    with tf.variable_scope("bert"):
        kernel = tf.get_variable("kernel", [4, 3], initializer=tf.truncated_normal_initializer(stddev=0.02))
    output_bias = tf.get_variable("output_bias", [3], initializer=tf.zeros_initializer())
    logits = tf.nn.bias_add(tf.matmul(features["input_ids"], kernel), output_bias)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    tvars = tf.trainable_variables()
    tf.train.init_from_checkpoint(init_checkpoint, get_assignment_map_from_checkpoint(tvars, init_checkpoint))
    train_op = tf.train.GradientDescentOptimizer(0.0).minimize(loss, global_step=tf.train.get_or_create_global_step())
    return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def input_fn(params):
    d = tf.data.Dataset.from_tensor_slices(({"input_ids": np.ones([8, 4], np.float32)}, np.zeros([8], np.int32)))
    return d.repeat().batch(params["batch_size"], drop_remainder=True)


run_config = NPURunConfig(model_dir="output", save_checkpoints_steps=4, iterations_per_loop=2)
estimator = NPUEstimator(model_fn=model_fn, config=run_config, params={"batch_size": 2})
estimator.train(input_fn=input_fn, max_steps=4)
kernel = tf.train.load_variable("output", "bert/kernel")
print("restored kernel", float(kernel.min()), float(kernel.max()), "step", tf.train.load_variable("output", "global_step"))
'''


@pytest.fixture(scope="module")
def sample_j_run(tmp_path_factory):
    from .conftest import run_compat

    tmp_path = tmp_path_factory.mktemp("sample_j")
    # one subprocess for both scripts: the MAML-style graph first, then the BERT-style estimator
    (tmp_path / "train.py").write_text(CONTRIB_ACCURACY_SCRIPT + BERT_INIT_CHECKPOINT_SCRIPT)
    return run_compat("run", tmp_path / "train.py", cwd=tmp_path)


def test_contrib_metrics_accuracy_is_a_plain_tensor(sample_j_run):
    # printed before the estimator part runs (which the next test checks)
    # (0 + 0 + 0.5) / 3; weighted: positions 0 and 2 right (weights 1 and 2) of weights 4; precision: 1 of 3
    assert "accuracy 0.1667 task 2 0.5 weighted 0.75 precision 0.3333333432674408 shape []" in \
        sample_j_run.stdout, sample_j_run.stdout[-2000:] + sample_j_run.stderr[-3000:]


def test_init_from_checkpoint_in_model_fn_under_a_device_loop(sample_j_run):
    assert sample_j_run.returncode == 0, sample_j_run.stderr[-3000:]
    assert "restored kernel 3.0 3.0 step 4" in sample_j_run.stdout, sample_j_run.stdout[-2000:]
