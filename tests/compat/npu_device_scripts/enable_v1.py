"""A TF2 ModelZoo script of the enable_v1 kind: npu_init's names, then TensorFlow 1 behaviour, a
tf.compat.v1 session loop. argv: out.json."""
import json
import sys

import numpy as np
import tensorflow as tf

import npu_device
from npu_device.compat.v1.npu_init import *  # noqa: F403

npu_device.compat.enable_v1()

x = tf.compat.v1.placeholder(tf.float32, [None, 4])
y = tf.compat.v1.placeholder(tf.float32, [None, 1])
w = tf.compat.v1.get_variable("w", [4, 1], initializer=tf.compat.v1.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
rng = np.random.RandomState(0)
data = rng.randn(64, 4).astype("float32")
target = data @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
losses = []
with tf.compat.v1.Session(config=npu_config_proto()) as sess:  # noqa: F405 - from npu_init
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(20):
        losses.append(float(sess.run([train_op, loss], {x: data, y: target})[1]))
json.dump({"loss": losses, "eager": tf.executing_eagerly()}, open(sys.argv[1], "w"))
