# A sess.run-mode training script in the style of the Ascend ModelZoo TensorFlow 1.x samples: the
# NPU options go into the session's ConfigProto as an "NpuOptimizer" custom optimizer entry, and
# util.set_iteration_per_loop sinks 10 training steps into each sess.run. Synthetic data: a
# 2-layer MLP learns a fixed linear classifier of 20-dimensional points.
import numpy as np
import tensorflow.compat.v1 as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator.npu import util

tf.disable_v2_behavior()

ITERATIONS_PER_LOOP = 10
LOOPS = 30
BATCH = 64


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 20)).astype(np.float32)
    w = np.random.RandomState(42).normal(size=(20, 3)).astype(np.float32)
    y = np.argmax(x @ w, axis=1).astype(np.int32)
    return x, y


def main():
    x, y = make_data(4096, seed=0)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096, seed=0).repeat().batch(BATCH, drop_remainder=True)
    iterator = dataset.make_initializable_iterator()
    features, labels = iterator.get_next()

    hidden = tf.layers.dense(features, 32, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 3, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)

    config = tf.ConfigProto(allow_soft_placement=True)
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["enable_data_pre_proc"].b = True
    custom_op.parameter_map["iterations_per_loop"].i = ITERATIONS_PER_LOOP
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_fp32_to_fp16")
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(iterator.initializer)
        train_op = util.set_iteration_per_loop(sess, train_op, ITERATIONS_PER_LOOP)
        for _ in range(LOOPS):
            _, loss_value = sess.run([train_op, loss])
            print("step_loss %.6f (global_step %d)" % (loss_value, sess.run(global_step)), flush=True)


if __name__ == "__main__":
    main()
