"""The synthetic model of the data-parallel tests: an embedding plus a two-layer MLP, MSE loss.

`make_data(steps, global_batch)` gives the same data on every rank; rank r of n trains on rows
[r*B, (r+1)*B) of each step's global batch (B = global_batch / n), the single-process reference
on all of them. Variables are initialised from `seed`, so ranks can start different.
"""
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
VOCAB, EMB, FEATURES, HIDDEN = 10, 3, 4, 8


def make_data(steps, global_batch, seed=123):
    rng = np.random.RandomState(seed)
    x = rng.randn(steps, global_batch, FEATURES).astype(np.float32)
    ids = rng.randint(0, VOCAB, size=(steps, global_batch)).astype(np.int32)
    y = (np.sin(x.sum(-1, keepdims=True)) + 0.1 * ids[..., None]).astype(np.float32)
    return x, ids, y


def build(seed, batch):
    """Placeholders, loss and variables of the model in the default graph."""
    init = np.random.RandomState(seed)
    x = v1.placeholder(tf.float32, [batch, FEATURES], name="x")
    ids = v1.placeholder(tf.int32, [batch], name="ids")
    y = v1.placeholder(tf.float32, [batch, 1], name="y")
    table = v1.get_variable("table", initializer=init.randn(VOCAB, EMB).astype(np.float32))
    w1 = v1.get_variable("w1", initializer=(0.5 * init.randn(FEATURES + EMB, HIDDEN)).astype(np.float32))
    b1 = v1.get_variable("b1", initializer=np.zeros(HIDDEN, np.float32))
    w2 = v1.get_variable("w2", initializer=(0.5 * init.randn(HIDDEN, 1)).astype(np.float32))
    hidden = tf.tanh(tf.matmul(tf.concat([x, tf.gather(table, ids)], 1), w1) + b1)
    loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))
    return {"x": x, "ids": ids, "y": y, "loss": loss, "vars": [table, w1, b1, w2]}


def optimizer():
    return v1.train.MomentumOptimizer(0.05, 0.9)


def weights(session, model):
    return [session.run(v) for v in model["vars"]]
