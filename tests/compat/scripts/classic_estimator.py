# A classic TensorFlow 2.x tf.estimator script (as written for TF <= 2.15): an MLP on scikit-learn's
# digits, tf.estimator.RunConfig / Estimator / EstimatorSpec, data from
# tf.compat.v1.estimator.inputs.numpy_input_fn, checkpoints written by rank 0 only.
# `npurun migrate` turns it into the NPU form; tests/compat/test_migrate_accuracy.py compares the
# accuracy of the original under TF 2.15 with that of the migrated script under npurun.
import argparse
import os

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits


def rank():
    return int(os.environ.get("RANK_ID", "0"))


def model_fn(features, labels, mode, params):
    net = tf.compat.v1.layers.dense(features["x"], 64, activation=tf.nn.relu, name="hidden")
    logits = tf.compat.v1.layers.dense(net, 10, name="logits")
    predictions = tf.argmax(logits, axis=1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"classes": predictions})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    accuracy = tf.compat.v1.metrics.accuracy(labels=labels, predictions=predictions)
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args()

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.RandomState(0).permutation(len(x))
    train, test = order[:1400], order[1400:]

    config = tf.estimator.RunConfig(
        model_dir=args.model_dir,
        tf_random_seed=42,
        save_checkpoints_steps=200 if rank() == 0 else None,
        keep_checkpoint_max=1,
        log_step_count_steps=100,
        device_fn=None)
    classifier = tf.estimator.Estimator(model_fn=model_fn, config=config, params={"learning_rate": 1e-3})
    classifier.train(
        input_fn=tf.compat.v1.estimator.inputs.numpy_input_fn(
            x={"x": x[train]}, y=y[train], batch_size=64, num_epochs=None, shuffle=True),
        steps=args.steps)
    result = classifier.evaluate(
        input_fn=tf.compat.v1.estimator.inputs.numpy_input_fn(
            x={"x": x[test]}, y=y[test], batch_size=128, num_epochs=1, shuffle=False))
    print("accuracy %.4f" % result["accuracy"], flush=True)


if __name__ == "__main__":
    main()
