# Data-parallel training as ModelZoo's 8p scripts do it: ranks from hccl's get_rank_size/get_rank_id
# (RANK_SIZE / RANK_ID), each rank reads its shard, NPUDistributedOptimizer averages the gradients, the
# broadcast hook makes the initial weights equal. Run with `npurun launch -n 2 data_parallel_estimator.py`.
# Synthetic data: a noisy linear regression.
from npu_bridge.npu_init import *
from hccl.manage.api import get_rank_size, get_rank_id
import numpy as np
import tensorflow as tf

flags = tf.flags
flags.DEFINE_string("model_dir", None, "model directory (one per rank)")
flags.DEFINE_integer("max_steps", 60, "training steps")
flags.DEFINE_integer("global_batch", 32, "batch size over all ranks")
FLAGS = flags.FLAGS


def input_fn():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(512, 6)).astype(np.float32)
    y = (x @ rng.normal(size=(6, 1)) + 0.05 * rng.normal(size=(512, 1))).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shard(get_rank_size(), get_rank_id())
    return dataset.shuffle(512).repeat().batch(FLAGS.global_batch // get_rank_size(), drop_remainder=True)


def model_fn(features, labels, mode):
    hidden = tf.layers.dense(features, 16, activation=tf.nn.tanh, name="hidden")
    prediction = tf.layers.dense(hidden, 1, name="prediction")
    loss = tf.losses.mean_squared_error(labels, prediction)
    optimizer = NPUDistributedOptimizer(tf.train.GradientDescentOptimizer(0.05))
    train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
    return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


class WeightsAtEnd(tf.train.SessionRunHook):
    """Prints a checksum of the last layer's weights when training ends (equal on every rank)."""

    def end(self, session):
        kernel = [v for v in tf.global_variables() if v.op.name == "prediction/kernel"][0]
        print("rank %d weights_checksum %.6f" % (get_rank_id(), session.run(kernel).sum()))


def main(_):
    tf.logging.set_verbosity(tf.logging.INFO)
    config = NPURunConfig(model_dir="%s/rank%d" % (FLAGS.model_dir, get_rank_id()), save_checkpoints_steps=0,
                          iterations_per_loop=5, log_step_count_steps=5)
    estimator = NPUEstimator(model_fn=model_fn, config=config)
    estimator.train(input_fn=input_fn, max_steps=FLAGS.max_steps, hooks=[WeightsAtEnd()])
    print("rank %d of %d done" % (get_rank_id(), get_rank_size()))


if __name__ == "__main__":
    tf.app.run()
