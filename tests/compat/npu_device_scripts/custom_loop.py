"""A TF2 ModelZoo-style custom training loop: tf.function + GradientTape, dumps at chosen steps, and
NpuLossScaleOptimizer skipping a step whose gradients overflow. argv: out.json dump_dir."""
import json
import sys

import numpy as np
import tensorflow as tf

import npu_device as npu

out, dump_dir = sys.argv[1], sys.argv[2]
npu.global_options().dump_config.enable_dump = True
npu.global_options().dump_config.dump_path = dump_dir
npu.global_options().dump_config.dump_step = "1|3"
npu.global_options().dump_config.dump_mode = "output"
npu.open().as_default()

rng = np.random.RandomState(0)
x_all = rng.randn(256, 8).astype("float32")
y_all = (x_all @ rng.randn(8, 1)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(32).repeat()

tf.random.set_seed(2)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="tanh", input_shape=(8,)),
                             tf.keras.layers.Dense(1)])
optimizer = npu.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.05), dynamic=False,
                                                      initial_scale=1)


@tf.function
def train_step(x, y, poison):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    grads = [g * poison for g in grads]  # poison = inf makes the step overflow
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


losses, skipped = [], None
for step, (x, y) in enumerate(dataset.take(30)):
    if step == 10:
        before = [w.numpy().copy() for w in model.trainable_variables]
        train_step(x, y, tf.constant(np.inf))
        after = [w.numpy() for w in model.trainable_variables]
        skipped = {"unchanged": all(np.array_equal(a, b) for a, b in zip(before, after)),
                   "last_step_finite": bool(optimizer.last_step_finite.numpy())}
        continue
    losses.append(float(train_step(x, y, tf.constant(1.0))))
json.dump({"loss": losses, "skipped": skipped, "iterations": int(optimizer.iterations.numpy())}, open(out, "w"))
