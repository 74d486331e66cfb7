# A multi-layer perceptron in the style of ModelZoo's Iris MLP: module-level graph, tf.flags read at
# import, weights as tf.Variable dicts, npu_tf_optimizer(...).minimize and feed_dict training.
# Synthetic data: 4 features, 3 classes separated by a fixed linear rule.
from npu_bridge.npu_init import *
import os
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'

import tensorflow as tf
import numpy as np

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_float("learning_rate", 0.05, "training learning rate")
flags.DEFINE_integer("training_epochs", 200, "train epochs")
flags.DEFINE_integer("display_steps", 10, "display steps")


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    w = np.array([[1.5, -1.0, 0.2], [-0.5, 1.2, 0.3], [0.8, 0.4, -1.3], [-1.1, 0.2, 0.9]], np.float32)
    y = np.eye(3, dtype=np.float32)[np.argmax(x @ w, axis=1)]
    return x, y


train_X, train_Y = make_data(300, 0)
n_input, n_hidden, n_output = 4, 10, 3

X = tf.placeholder("float", [None, n_input])
Y = tf.placeholder("float", [None, n_output])
tf.set_random_seed(1)
weights = {"hidden": tf.Variable(tf.random_normal([n_input, n_hidden])),
           "output": tf.Variable(tf.random_normal([n_hidden, n_output]))}
bias = {"hidden": tf.Variable(tf.random_normal([n_hidden])), "output": tf.Variable(tf.random_normal([n_output]))}


def model(X, weights, bias):
    layer1 = tf.nn.relu(tf.add(tf.matmul(X, weights["hidden"]), bias["hidden"]))
    return tf.matmul(layer1, weights["output"]) + bias["output"]


pred = model(X, weights, bias)
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=Y))
optimizer = npu_tf_optimizer(tf.train.AdamOptimizer(FLAGS.learning_rate)).minimize(cost)

init = tf.global_variables_initializer()
config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_fp32_to_fp16")
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
with tf.Session(config=config) as sess:
    sess.run(init)
    for epoch in range(FLAGS.training_epochs):
        _, c = sess.run([optimizer, cost], feed_dict={X: train_X, Y: train_Y})
        if (epoch + 1) % FLAGS.display_steps == 0:
            print("Epoch:", epoch + 1, "step_loss %.5f" % c)
    correct = tf.equal(tf.argmax(pred, 1), tf.argmax(Y, 1))
    print("accuracy %.3f" % sess.run(tf.reduce_mean(tf.cast(correct, "float")), {X: train_X, Y: train_Y}))
