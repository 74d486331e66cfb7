"""A BERT-like block as TF2 ModelZoo's BERT scripts write it: fast gelu through npu_device.ops /
gen_npu_ops and layer norm through gen_npu_ops.fused_layer_norm, trained with Keras fit. argv: out.json."""
import json
import math
import sys

import numpy as np
import tensorflow as tf

import npu_device
from npu_device import gen_npu_ops


def gelu(x):
    if not hasattr(npu_device.ops, "gelu"):
        return npu_device.gen_npu_ops.fast_gelu(x)
    return getattr(npu_device.ops, "gelu")(x)


class FusedLayerNorm(tf.keras.layers.Layer):
    def build(self, shape):
        self.gamma = self.add_weight("gamma", shape[-1:], initializer="ones")
        self.beta = self.add_weight("beta", shape[-1:], initializer="zeros")

    def call(self, inputs):
        outputs, _mean, _variance = gen_npu_ops.fused_layer_norm(inputs, self.gamma, self.beta, begin_norm_axis=-1,
                                                                begin_params_axis=-1, epsilon=1e-12)
        return outputs


class Block(tf.keras.layers.Layer):
    def __init__(self, hidden, **kwargs):
        super().__init__(**kwargs)
        self.attention = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=hidden // 2)
        self.norm1, self.norm2 = FusedLayerNorm(), FusedLayerNorm()
        self.inner = tf.keras.layers.Dense(hidden * 2)
        self.output_dense = tf.keras.layers.Dense(hidden)

    def call(self, x):
        x = self.norm1(x + self.attention(x, x))
        return self.norm2(x + self.output_dense(gelu(self.inner(x))))


npu_device.global_options().precision_mode = "allow_mix_precision"
npu_device.open().as_default()

# the kernels, eagerly, against their formulas
x = tf.constant(np.linspace(-4, 4, 9, dtype="float32"))
fast = gen_npu_ops.fast_gelu(x).numpy()
expected = x.numpy() / (1 + np.exp(-1.702 * np.abs(x.numpy()))) * np.exp(0.851 * (x.numpy() - np.abs(x.numpy())))
with tf.GradientTape() as tape:
    tape.watch(x)
    y = gen_npu_ops.fast_gelu(x)
grad_match = np.allclose(tape.gradient(y, x).numpy(), gen_npu_ops.fast_gelu_grad(tf.ones_like(x), x).numpy(),
                         atol=1e-6)
h = tf.random.stateless_normal([4, 6], seed=[1, 2])
normed, mean, var = gen_npu_ops.fused_layer_norm(h, tf.ones([6]), tf.zeros([6]), begin_norm_axis=1,
                                                begin_params_axis=1)
reference = tf.keras.layers.LayerNormalization(epsilon=1e-7)(h).numpy()
exact = npu_device.ops.gelu(tf.constant([1.0])).numpy()[0]

rng = np.random.RandomState(0)
tokens = rng.randint(0, 50, size=(256, 12))
labels = (tokens[:, :6].sum(1) > tokens[:, 6:].sum(1)).astype("int32")
dataset = tf.data.Dataset.from_tensor_slices((tokens, labels)).shuffle(256, seed=1).batch(32)
tf.random.set_seed(3)
inputs = tf.keras.Input((12,), dtype="int32")
hidden = Block(32)(tf.keras.layers.Embedding(50, 32)(inputs))
logits = tf.keras.layers.Dense(2)(tf.keras.layers.GlobalAveragePooling1D()(hidden))
model = tf.keras.Model(inputs, logits)
model.compile(tf.keras.optimizers.Adam(3e-3), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
history = model.fit(dataset, epochs=5, verbose=0)
json.dump({"loss": history.history["loss"], "fast_gelu_max_error": float(np.max(np.abs(fast - expected))),
           "fast_gelu_grad_matches": bool(grad_match),
           "layer_norm_max_error": float(np.max(np.abs(normed.numpy() - reference))),
           "mean_shape": mean.shape.as_list(), "eager_gelu": float(exact),
           "exact_gelu_1": 0.5 * (1 + math.erf(1 / math.sqrt(2)))}, open(sys.argv[1], "w"))
