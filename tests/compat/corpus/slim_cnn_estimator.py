# A small slim CNN on NPUEstimator in the style of ModelZoo's ShuffleNet/MobileNet scripts: slim arg_scope
# with batch_norm, an ExponentialMovingAverage of the weights applied with the train op, evaluation that
# restores the EMA shadows (Scaffold with a Saver over ema.variables_to_restore()), the run config made by
# npu_run_config_init and the hooks list by npu_hooks_append.
# Synthetic data: 16x16x3 images whose class is the brightest colour channel.
from npu_bridge.npu_init import *
import argparse

import numpy as np
import tensorflow as tf
import tensorflow.contrib.slim as slim

MOVING_AVERAGE_DECAY = 0.9


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch_size", type=int, default=32)
    return parser.parse_args()


def network(images, is_training):
    with slim.arg_scope([slim.conv2d, slim.fully_connected], normalizer_fn=slim.batch_norm,
                        normalizer_params={"is_training": is_training, "decay": 0.9},
                        weights_regularizer=slim.l2_regularizer(1e-4)):
        net = slim.conv2d(images, 8, [3, 3], scope="conv1")
        net = slim.max_pool2d(net, [2, 2], scope="pool1")
        net = slim.conv2d(net, 16, [3, 3], stride=2, scope="conv2")
        net = tf.reduce_mean(net, axis=[1, 2])
        return slim.fully_connected(net, 3, activation_fn=None, normalizer_fn=None, scope="logits")


def model_fn(features, labels, mode, params):
    is_training = mode == tf.estimator.ModeKeys.TRAIN
    logits = network(features, is_training)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    total_loss = tf.add_n([loss] + tf.losses.get_regularization_losses())
    global_step = tf.train.get_or_create_global_step()
    ema = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    if is_training:
        optimizer = tf.train.MomentumOptimizer(0.05, 0.9)
        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            train_op = optimizer.minimize(total_loss, global_step=global_step)
        with tf.control_dependencies([train_op]):
            train_op = ema.apply(tf.trainable_variables())
        return tf.estimator.EstimatorSpec(mode, loss=total_loss, train_op=train_op)
    # Evaluate the averaged weights, as the ModelZoo scripts do.
    scaffold = tf.train.Scaffold(saver=tf.train.Saver(ema.variables_to_restore()))
    accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, axis=1))
    return tf.estimator.EstimatorSpec(mode, loss=total_loss, eval_metric_ops={"accuracy": accuracy},
                                      scaffold=scaffold)


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 3, size=n).astype(np.int32)
    images = rng.uniform(0, 0.5, size=(n, 16, 16, 3)).astype(np.float32)
    images[np.arange(n), :, :, labels] += 0.5
    return images, labels


def input_fn(images, labels, training, batch_size):
    def fn():
        d = tf.data.Dataset.from_tensor_slices((images, labels))
        if training:
            d = d.shuffle(1024).repeat()
        return d.batch(batch_size, drop_remainder=True)
    return fn


def main():
    args = get_args()
    tf.logging.set_verbosity(tf.logging.INFO)
    run_config = tf.estimator.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=args.steps,
                                        log_step_count_steps=5, save_summary_steps=0)
    estimator = NPUEstimator(model_fn=model_fn, config=npu_run_config_init(run_config=run_config))
    images, labels = make_data(1024, 0)
    estimator.train(input_fn=input_fn(images, labels, True, args.batch_size), max_steps=args.steps,
                    hooks=npu_hooks_append())
    eval_images, eval_labels = make_data(256, 1)
    result = estimator.evaluate(input_fn=input_fn(eval_images, eval_labels, False, args.batch_size))
    print("eval_accuracy %.4f" % result["accuracy"])


if __name__ == "__main__":
    main()
