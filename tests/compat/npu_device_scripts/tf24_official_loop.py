"""A TF 2.4-era npu_device script in the style of the official models' ResNet ctl code vendored into TensorFlow2
ModelZoo folders: absl flags with a str enum_values, Keras 2.4's `tf.keras.mixed_precision.experimental`, a
momentum optimizer subclassing `keras.optimizer_v2.optimizer_v2.OptimizerV2` that applies
`training_ops.resource_apply_keras_momentum` and `optimizer_utils` from `keras.optimizer_v2`, a learning-rate
schedule built on `ops.convert_to_tensor_v2`, `np.float` and `tf.keras.__version__`. argv: out.json (then absl's flags)."""
import json
import sys

from absl import app, flags
import numpy as np
import tensorflow as tf
from keras.optimizer_v2 import optimizer_v2
from keras.optimizer_v2 import utils as optimizer_utils
from tensorflow.python.framework import ops
from tensorflow.python.training import training_ops

import npu_device as npu

flags.DEFINE_enum(name="fp16_implementation", default="keras", enum_values=("keras', 'graph_rewrite"),
                  help="as the official models define it")
FLAGS = flags.FLAGS


class Momentum(optimizer_v2.OptimizerV2):
    def __init__(self, learning_rate, momentum=0.9, name="Momentum"):
        super().__init__(name)
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("momentum", momentum)

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "momentum")

    def _resource_apply_dense(self, grad, var, apply_state=None):
        return training_ops.resource_apply_keras_momentum(
            var.handle, self.get_slot(var, "momentum").handle, self._decayed_lr(var.dtype.base_dtype), grad,
            self._get_hyper("momentum", var.dtype.base_dtype), use_locking=self._use_locking, use_nesterov=False)

    def get_config(self):
        return super().get_config()


class Warmup(tf.keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, rate, steps):
        self.rate, self.steps = rate, steps

    def __call__(self, step):
        rate = ops.convert_to_tensor_v2(self.rate, name="initial_learning_rate")
        return rate * tf.minimum(1.0, tf.cast(step + 1, rate.dtype) / self.steps)

    def get_config(self):
        return {"rate": self.rate, "steps": self.steps}


def main(argv):
    npu.global_options().precision_mode = "allow_mix_precision"
    npu.open().as_default()
    tf.keras.mixed_precision.experimental.set_policy("float32")
    policy = tf.keras.mixed_precision.experimental.Policy("mixed_float16", loss_scale="dynamic")
    rng = np.random.RandomState(0)
    x = rng.randn(128, 6).astype(np.float)  # float64, as NumPy 1.19's np.float was Python's float
    y = (x @ rng.randn(6, 1)).astype("float32")
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)),
                                 tf.keras.layers.Dense(1)])
    optimizer = tf.keras.mixed_precision.experimental.LossScaleOptimizer(Momentum(Warmup(0.05, 5)), 128)
    variables = model.trainable_variables

    @tf.function
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(inputs, training=True) - targets))
            scaled = optimizer.get_scaled_loss(loss)
        grads = optimizer.get_unscaled_gradients(tape.gradient(scaled, variables))
        grads = optimizer_utils.filter_empty_gradients(list(zip(grads, variables)))
        optimizer.apply_gradients(grads)
        return loss

    losses = [float(step(tf.constant(x, tf.float32), y)) for _ in range(40)]
    report = {"loss": losses, "fp16_implementation": FLAGS.fp16_implementation,
              "global_policy": tf.keras.mixed_precision.experimental.global_policy().name,
              "policy": [policy.name, policy.loss_scale], "loss_scale": float(optimizer.loss_scale),
              "is_lso": isinstance(optimizer, tf.keras.mixed_precision.experimental.LossScaleOptimizer),
              "x_dtype": str(x.dtype), "keras_version": tf.keras.__version__}
    with open(argv[1], "w") as out:
        json.dump(report, out)


if __name__ == "__main__":
    app.run(main, argv=[sys.argv[0]] + sys.argv[1:])
