# Image classification with NPUEstimator, in the style of the Ascend ModelZoo TensorFlow 1.x
# training scripts (ResNet / VGG launchers): flags, a model_fn built from tf.layers, an NPURunConfig
# with loop sinking and mixed precision, NPUDistributedOptimizer, train then evaluate; the loss is
# read from the estimator's log (loss = ..., step = ...).
# Small synthetic data: a bright 6x6 patch in one of four quadrants of a noisy 16x16 image; the
# class is the quadrant.
import argparse

import numpy as np
import tensorflow.compat.v1 as tf
from npu_bridge.npu_init import *

IMAGE_SIZE = 16
NUM_CLASSES = 4


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", default="./model_dir_image")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_steps", type=int, default=100)
    parser.add_argument("--iterations_per_loop", type=int, default=10)
    parser.add_argument("--learning_rate", type=float, default=0.05)
    return parser.parse_args()


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, NUM_CLASSES, size=n).astype(np.int32)
    images = rng.normal(0.0, 0.6, size=(n, IMAGE_SIZE, IMAGE_SIZE, 1)).astype(np.float32)
    for i, label in enumerate(labels):
        row, col = divmod(int(label), 2)
        r0, c0 = row * 8 + 1, col * 8 + 1
        images[i, r0:r0 + 6, c0:c0 + 6, 0] += 0.5
    return images, labels


def input_fn(images, labels, batch_size, training):
    def _fn():
        dataset = tf.data.Dataset.from_tensor_slices((images, labels))
        if training:
            dataset = dataset.shuffle(1024, seed=1).repeat()
        return dataset.batch(batch_size, drop_remainder=True)
    return _fn


def model_fn(features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    net = tf.layers.conv2d(features, 16, 3, padding="same", name="conv1")
    net = tf.layers.batch_normalization(net, training=training, name="bn1")
    net = tf.nn.relu(net)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 32, 3, padding="same", activation=tf.nn.relu, name="conv2")
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 64, activation=tf.nn.relu, name="fc1")
    net = tf.layers.dropout(net, rate=0.2, training=training)
    logits = tf.layers.dense(net, NUM_CLASSES, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

    if training:
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.MomentumOptimizer(params["learning_rate"], momentum=0.9)
        opt = NPUDistributedOptimizer(opt)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train_op = opt.minimize(loss, global_step=global_step)
        return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)

    accuracy = tf.metrics.accuracy(labels=labels, predictions=tf.argmax(logits, axis=1))
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops={"accuracy": accuracy})


def main():
    args = parse_args()
    train_images, train_labels = make_data(2048, seed=0)
    eval_images, eval_labels = make_data(512, seed=1)

    session_config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)
    run_config = NPURunConfig(
        model_dir=args.model_dir,
        tf_random_seed=1234,
        iterations_per_loop=args.iterations_per_loop,
        precision_mode="allow_mix_precision",
        hcom_parallel=True,
        enable_data_pre_proc=True,
        save_checkpoints_steps=100,
        keep_checkpoint_max=1,
        log_step_count_steps=10,
        session_config=session_config)
    estimator = NPUEstimator(model_fn=model_fn, config=run_config,
                             params={"learning_rate": args.learning_rate})
    estimator.train(input_fn=input_fn(train_images, train_labels, args.batch_size, True),
                    max_steps=args.max_steps)
    result = estimator.evaluate(input_fn=input_fn(eval_images, eval_labels, args.batch_size, False))
    print("eval_accuracy %.4f" % result["accuracy"], flush=True)


if __name__ == "__main__":
    main()
