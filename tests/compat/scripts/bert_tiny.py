# A BERT-style classifier trained with NPUEstimator, in the style of the Ascend ModelZoo BERT
# scripts: NPUOptimizer with an ExponentialUpdateLossScaleManager, npu_ops.dropout in place of
# tf.nn.dropout, gradient clipping between compute_gradients and apply_gradients, and the global
# step advanced next to the optimizer. One tiny transformer layer on synthetic token sequences; the
# label says whether token 7 occurs in the sequence.
import argparse
import math

import numpy as np
import tensorflow.compat.v1 as tf
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec
from npu_bridge.estimator.npu.npu_loss_scale_manager import ExponentialUpdateLossScaleManager
from npu_bridge.estimator.npu.npu_optimizer import NPUOptimizer

VOCAB, SEQ, HIDDEN, HEADS = 32, 16, 32, 2


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", default="./bert_output")
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--num_train_steps", type=int, default=200)
    parser.add_argument("--iterations_per_loop", type=int, default=10)
    parser.add_argument("--learning_rate", type=float, default=3e-3)
    return parser.parse_args()


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    ids = rng.randint(8, VOCAB, size=(n, SEQ)).astype(np.int32)
    labels = rng.randint(0, 2, size=n).astype(np.int32)
    for i in np.nonzero(labels)[0]:
        ids[i, rng.randint(1, SEQ)] = 7
    ids[:, 0] = 1  # [CLS]
    return ids, labels


def gelu(x):
    return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


def layer_norm(x, name):
    with tf.variable_scope(name):
        gamma = tf.get_variable("gamma", [HIDDEN], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [HIDDEN], initializer=tf.zeros_initializer())
        mean, variance = tf.nn.moments(x, [-1], keep_dims=True)
        return (x - mean) * tf.rsqrt(variance + 1e-12) * gamma + beta


def dropout(x, keep_prob, training):
    return npu_ops.dropout(x, keep_prob) if training else x


def encoder(input_ids, training):
    init = tf.truncated_normal_initializer(stddev=0.02)
    word = tf.get_variable("word_embeddings", [VOCAB, HIDDEN], initializer=init)
    position = tf.get_variable("position_embeddings", [SEQ, HIDDEN], initializer=init)
    x = tf.nn.embedding_lookup(word, input_ids) + position[None, :, :]
    x = dropout(layer_norm(x, "embeddings_ln"), 0.9, training)
    size = HIDDEN // HEADS

    def heads(t):
        return tf.transpose(tf.reshape(t, [-1, SEQ, HEADS, size]), [0, 2, 1, 3])

    with tf.variable_scope("layer_0"):
        q = heads(tf.layers.dense(x, HIDDEN, name="query", kernel_initializer=init))
        k = heads(tf.layers.dense(x, HIDDEN, name="key", kernel_initializer=init))
        v = heads(tf.layers.dense(x, HIDDEN, name="value", kernel_initializer=init))
        probs = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / math.sqrt(size))
        context = tf.reshape(tf.transpose(tf.matmul(dropout(probs, 0.9, training), v), [0, 2, 1, 3]),
                             [-1, SEQ, HIDDEN])
        attention = tf.layers.dense(context, HIDDEN, name="attention_output", kernel_initializer=init)
        x = layer_norm(x + dropout(attention, 0.9, training), "attention_ln")
        hidden = tf.layers.dense(x, 4 * HIDDEN, activation=gelu, name="intermediate", kernel_initializer=init)
        out = tf.layers.dense(hidden, HIDDEN, name="output", kernel_initializer=init)
        x = layer_norm(x + dropout(out, 0.9, training), "output_ln")
    return tf.layers.dense(x[:, 0, :], HIDDEN, activation=tf.tanh, name="pooler", kernel_initializer=init)


def model_fn(features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    pooled = encoder(features["input_ids"], training)
    logits = tf.layers.dense(dropout(pooled, 0.9, training), 2, name="classifier")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    if not training:
        accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, axis=-1))
        return NPUEstimatorSpec(mode=mode, loss=loss, eval_metric_ops={"accuracy": accuracy})

    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.AdamOptimizer(learning_rate=params["learning_rate"])
    loss_scale_manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 10, incr_every_n_steps=100,
                                                           decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    opt = NPUOptimizer(opt, loss_scale_manager, is_distributed=False, is_loss_scale=True,
                       is_tailing_optimization=False)
    grads_and_vars = opt.compute_gradients(loss)
    grads, tvars = zip(*grads_and_vars)
    grads, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
    train_op = opt.apply_gradients(zip(grads, tvars))
    train_op = tf.group(train_op, [global_step.assign(global_step + 1)])
    return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def input_fn_builder(ids, labels, batch_size, is_training):
    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"input_ids": ids}, labels))
        if is_training:
            dataset = dataset.shuffle(1000, seed=3).repeat()
        return dataset.batch(batch_size, drop_remainder=True)
    return input_fn


def main():
    args = parse_args()
    tf.logging.set_verbosity(tf.logging.INFO)
    train_ids, train_labels = make_data(4096, seed=0)
    eval_ids, eval_labels = make_data(512, seed=1)
    run_config = NPURunConfig(
        model_dir=args.output_dir,
        save_checkpoints_steps=100,
        iterations_per_loop=args.iterations_per_loop,
        precision_mode="allow_mix_precision",
        enable_data_pre_proc=True,
        is_tailing_optimization=False,
        hcom_parallel=True,
        log_step_count_steps=10,
        keep_checkpoint_max=1)
    estimator = NPUEstimator(model_fn=model_fn, config=run_config, params={"learning_rate": args.learning_rate})
    estimator.train(input_fn=input_fn_builder(train_ids, train_labels, args.train_batch_size, True),
                    max_steps=args.num_train_steps)
    result = estimator.evaluate(input_fn=input_fn_builder(eval_ids, eval_labels, args.train_batch_size, False))
    print("eval_accuracy %.4f" % result["accuracy"], flush=True)


if __name__ == "__main__":
    main()
