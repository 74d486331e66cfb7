# The classic TensorFlow 1 MNIST softmax/CNN tutorial as ModelZoo scripts carry it:
# input_data.read_data_sets(FLAGS.data_dir, one_hot=True), mnist.train.next_batch in a feed_dict loop,
# tf.app.run, an NpuOptimizer session config. The test writes the four MNIST idx files into data_dir.
from npu_bridge.npu_init import *
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

FLAGS = tf.app.flags.FLAGS
tf.app.flags.DEFINE_string("data_dir", "/tmp/mnist", "Directory with the MNIST files")
tf.app.flags.DEFINE_integer("max_steps", 120, "training steps")
tf.app.flags.DEFINE_integer("batch_size", 50, "batch size")


def weight_variable(shape):
    return tf.Variable(tf.truncated_normal(shape, stddev=0.1))


def bias_variable(shape):
    return tf.Variable(tf.constant(0.1, shape=shape))


def main(_):
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True, validation_size=100)
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    x_image = tf.reshape(x, [-1, 28, 28, 1])
    h_conv = tf.nn.relu(tf.nn.conv2d(x_image, weight_variable([5, 5, 1, 8]), strides=[1, 1, 1, 1],
                                     padding="SAME") + bias_variable([8]))
    h_pool = tf.nn.max_pool(h_conv, ksize=[1, 4, 4, 1], strides=[1, 4, 4, 1], padding="SAME")
    h_flat = tf.reshape(h_pool, [-1, 7 * 7 * 8])
    y = tf.matmul(h_flat, weight_variable([7 * 7 * 8, 10])) + bias_variable([10])
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train_step = tf.train.AdamOptimizer(1e-2).minimize(cross_entropy)
    correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

    sess = tf.InteractiveSession(config=npu_config_proto())
    tf.global_variables_initializer().run()
    for i in range(FLAGS.max_steps):
        batch_xs, batch_ys = mnist.train.next_batch(FLAGS.batch_size)
        _, loss = sess.run([train_step, cross_entropy], feed_dict={x: batch_xs, y_: batch_ys})
        if i % 10 == 0:
            print("step %d step_loss %.5f" % (i, loss))
    print("test_accuracy %.4f" % sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels}))
    sess.close()


if __name__ == "__main__":
    tf.app.run()
