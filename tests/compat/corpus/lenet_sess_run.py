# LeNet on MNIST-shaped data, sess.run style (TensorFlow 1.15 code as in Ascend ModelZoo samples):
# tf.app.run flags, a hand-written NpuOptimizer ConfigProto entry, util.set_iteration_per_loop sinking
# ITERATIONS steps into each sess.run, NPULossScaleOptimizer with a dynamic loss scale.
# Synthetic data: each class is a fixed random 28x28 pattern plus noise.
from npu_bridge.npu_init import *
import os
import time

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 32, "batch size")
flags.DEFINE_integer("loops", 20, "number of sess.run calls")
flags.DEFINE_integer("iterations_per_loop", 5, "training steps per sess.run")
flags.DEFINE_float("learning_rate", 0.003, "learning rate")
flags.DEFINE_string("precision_mode", "allow_mix_precision", "precision mode")
flags.DEFINE_integer("seed", 1, "graph-level random seed")


def synthetic_mnist(n, seed):
    rng = np.random.RandomState(seed)
    patterns = np.random.RandomState(7).uniform(0, 1, size=(10, 28, 28, 1)).astype(np.float32)
    labels = rng.randint(0, 10, size=n).astype(np.int32)
    images = patterns[labels] + 0.3 * rng.normal(size=(n, 28, 28, 1)).astype(np.float32)
    return images, labels


def lenet(images):
    net = tf.layers.conv2d(images, 6, 5, activation=tf.nn.relu, name="conv1")
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool1")
    net = tf.layers.conv2d(net, 16, 5, activation=tf.nn.relu, name="conv2")
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 84, activation=tf.nn.relu, name="fc1")
    return tf.layers.dense(net, 10, name="logits")


def main(_):
    tf.logging.set_verbosity(tf.logging.ERROR)
    tf.set_random_seed(FLAGS.seed)
    images, labels = synthetic_mnist(2048, seed=0)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(2048, seed=FLAGS.seed).repeat()
    dataset = dataset.batch(FLAGS.batch_size, drop_remainder=True)
    iterator = dataset.make_initializable_iterator()
    x, y = iterator.get_next()

    logits = lenet(x)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.AdamOptimizer(FLAGS.learning_rate)
    if FLAGS.precision_mode == "allow_mix_precision":
        manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 16, incr_every_n_steps=1000,
                                                    decr_every_n_nan_or_inf=2, decr_ratio=0.5)
        optimizer = NPULossScaleOptimizer(optimizer, manager)
    train_op = optimizer.minimize(loss, global_step=global_step)

    config = tf.ConfigProto(allow_soft_placement=True)
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["iterations_per_loop"].i = FLAGS.iterations_per_loop
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes(FLAGS.precision_mode)
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(iterator.initializer)
        train_op = util.set_iteration_per_loop(sess, train_op, FLAGS.iterations_per_loop)
        for loop in range(FLAGS.loops):
            start = time.time()
            _, loss_value, step = sess.run([train_op, loss, global_step])
            print("step_loss %.5f global_step %d (%.3fs)" % (loss_value, step, time.time() - start))


if __name__ == "__main__":
    tf.app.run()
