# A sequence classifier in the TensorFlow 1 style of ModelZoo's NLP/speech scripts: hyperparameters in
# tf.contrib.training.HParams overridden from a --hparams string, tf.contrib.data.map_and_batch and a
# one-shot iterator, tf.contrib.rnn.LSTMCell with tf.nn.dynamic_rnn, tf.contrib.layers initializers and
# regularizers, trained in a MonitoredTrainingSession with an NPU session config.
# Synthetic task: is the running sum of the sequence positive at the end?
from npu_bridge.npu_init import *
import argparse

import numpy as np
import tensorflow as tf


def create_hparams(overrides):
    hparams = tf.contrib.training.HParams(batch_size=32, num_units=16, learning_rate=0.01, max_steps=60,
                                          l2_scale=1e-4, seq_len=10)
    return hparams.parse(overrides)


def dataset(hparams):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(2048, hparams.seq_len, 1)).astype(np.float32)
    y = (x.sum(axis=(1, 2)) > 0).astype(np.int32)

    def parse(features, label):
        return features * 1.0, label

    d = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return d.apply(tf.contrib.data.map_and_batch(parse, hparams.batch_size, drop_remainder=True))


def model(inputs, hparams):
    cell = tf.contrib.rnn.LSTMCell(hparams.num_units, initializer=tf.contrib.layers.xavier_initializer())
    outputs, state = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
    regularizer = tf.contrib.layers.l2_regularizer(hparams.l2_scale)
    logits = tf.layers.dense(state.h, 2, kernel_regularizer=regularizer, name="logits")
    return logits


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hparams", default="")
    hparams = create_hparams(parser.parse_args().hparams)
    print("hparams", hparams.values())
    features, labels = dataset(hparams).make_one_shot_iterator().get_next()
    logits = model(features, hparams)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits) + tf.losses.get_regularization_loss()
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(hparams.learning_rate).minimize(loss, global_step=global_step)
    hooks = [tf.train.StopAtStepHook(last_step=hparams.max_steps)]
    with tf.train.MonitoredTrainingSession(hooks=hooks, config=npu_config_proto(), save_checkpoint_secs=None,
                                           save_summaries_steps=None) as sess:
        while not sess.should_stop():
            _, value, step = sess.run([train_op, loss, global_step])
            if step % 5 == 0:
                print("step %d step_loss %.5f" % (step, value))


if __name__ == "__main__":
    main()
