"""A TF2 ModelZoo-style Keras script: options on npu_device.global_options(), open().as_default(), then
model.fit on a tf.data pipeline. argv: out.json [mixlist.json]. Reports the losses and the dtype of
every MatMul of the graphs TensorFlow executed (after grappler)."""
import json
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context

import npu_device

out = sys.argv[1]
npu_device.global_options().precision_mode = "allow_mix_precision_bf16"
if len(sys.argv) > 2:
    npu_device.global_options().modify_mixlist = sys.argv[2]
npu_device.open().as_default()

rng = np.random.RandomState(0)
features = rng.randn(512, 16).astype("float32")
labels = (features @ rng.randn(16, 1) > 0).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(512, seed=1).batch(64)

tf.random.set_seed(1)
model = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="relu", input_shape=(16,)),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
context.enable_graph_collection()
history = model.fit(dataset, epochs=4, verbose=0)
dtypes = sorted({tf.dtypes.as_dtype(node.attr["T"].type).name
                 for graph in context.export_run_metadata().function_graphs
                 for node in graph.post_optimization_graph.node if node.op.endswith("MatMul")})
json.dump({"loss": history.history["loss"], "matmul_dtypes": dtypes, "eager": tf.executing_eagerly()},
          open(out, "w"))
