# A BERT-style sentence classifier on NPUEstimator, as in ModelZoo's BERT fine-tuning scripts: tf.flags,
# a model_fn with embeddings, one self-attention block with gelu (npu_unary_ops), npu_ops.dropout and
# tf.contrib.layers.layer_norm, NPUEstimatorSpec, NPURunConfig with iterations_per_loop.
# Synthetic task: label = whether token 1 occurs in the sequence.
import numpy as np
import tensorflow as tf
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec
from npu_bridge.estimator.npu_unary_ops import npu_unary_ops

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "model directory")
flags.DEFINE_integer("train_batch_size", 32, "batch size")
flags.DEFINE_integer("num_train_steps", 120, "training steps")
flags.DEFINE_integer("iterations_per_loop", 10, "steps per device loop")
flags.DEFINE_float("learning_rate", 3e-3, "Adam learning rate")
flags.mark_flag_as_required("output_dir")

VOCAB, SEQ, HIDDEN = 20, 12, 32


def layer_norm(input_tensor, name=None):
    return tf.contrib.layers.layer_norm(inputs=input_tensor, begin_norm_axis=-1, begin_params_axis=-1,
                                        scope=name)


def dropout(input_tensor, dropout_prob):
    if dropout_prob is None or dropout_prob == 0.0:
        return input_tensor
    return npu_ops.dropout(input_tensor, 1.0 - dropout_prob)


def create_initializer(initializer_range=0.02):
    return tf.truncated_normal_initializer(stddev=initializer_range)


def encoder(input_ids, is_training):
    hidden_dropout = 0.1 if is_training else 0.0
    with tf.variable_scope("bert"):
        embedding_table = tf.get_variable("word_embeddings", [VOCAB, HIDDEN], initializer=create_initializer())
        x = tf.nn.embedding_lookup(embedding_table, input_ids)
        position = tf.get_variable("position_embeddings", [SEQ, HIDDEN], initializer=create_initializer())
        x = layer_norm(x + tf.expand_dims(position, 0), "embeddings/LayerNorm")
        with tf.variable_scope("attention"):
            q = tf.layers.dense(x, HIDDEN, name="query", kernel_initializer=create_initializer())
            k = tf.layers.dense(x, HIDDEN, name="key", kernel_initializer=create_initializer())
            v = tf.layers.dense(x, HIDDEN, name="value", kernel_initializer=create_initializer())
            scores = tf.matmul(q, k, transpose_b=True) / np.sqrt(HIDDEN)
            context = tf.matmul(tf.nn.softmax(scores), v)
            x = layer_norm(x + dropout(context, hidden_dropout), "output/LayerNorm")
        with tf.variable_scope("intermediate"):
            h = npu_unary_ops.gelu(tf.layers.dense(x, 4 * HIDDEN, kernel_initializer=create_initializer()))
            h = tf.layers.dense(h, HIDDEN, kernel_initializer=create_initializer())
            x = layer_norm(x + dropout(h, hidden_dropout), "output_ffn/LayerNorm")
        return tf.reduce_max(x, axis=1)


def model_fn(features, labels, mode, params):
    is_training = mode == tf.estimator.ModeKeys.TRAIN
    pooled = encoder(features["input_ids"], is_training)
    logits = tf.layers.dense(pooled, 2, name="classifier")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if is_training:
        train_op = tf.train.AdamOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
        return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=tf.argmax(logits, axis=-1))
    return NPUEstimatorSpec(mode=mode, loss=loss, eval_metric_ops={"accuracy": accuracy})


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    ids = rng.randint(2, VOCAB, size=(n, SEQ)).astype(np.int32)
    labels = rng.randint(0, 2, size=n).astype(np.int32)
    ids[np.arange(n), rng.randint(0, SEQ, size=n)] = np.where(labels == 1, 1, ids[:, 0])
    return ids, labels


def input_fn_builder(ids, labels, is_training):
    def input_fn(params):
        d = tf.data.Dataset.from_tensor_slices(({"input_ids": ids}, labels))
        if is_training:
            d = d.shuffle(1024).repeat()
        return d.batch(FLAGS.train_batch_size, drop_remainder=True)
    return input_fn


def main(_):
    tf.logging.set_verbosity(tf.logging.INFO)
    run_config = NPURunConfig(model_dir=FLAGS.output_dir, save_checkpoints_steps=1000,
                              iterations_per_loop=FLAGS.iterations_per_loop, log_step_count_steps=10,
                              precision_mode="allow_mix_precision")
    estimator = NPUEstimator(model_fn=model_fn, config=run_config, params={})
    train_ids, train_labels = make_data(2048, 0)
    estimator.train(input_fn=input_fn_builder(train_ids, train_labels, True), max_steps=FLAGS.num_train_steps)
    eval_ids, eval_labels = make_data(256, 1)
    result = estimator.evaluate(input_fn=input_fn_builder(eval_ids, eval_labels, False))
    print("eval_accuracy %.4f" % result["accuracy"])


if __name__ == "__main__":
    tf.app.run()
