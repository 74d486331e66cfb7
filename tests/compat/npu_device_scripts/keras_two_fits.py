"""A keras_sample-style npu_device script (the third draw's gradient_centralization / learnable_resizer): argparse
flags for the NPU's profiling and dump branches, npu_config() filling global_options() before
npu_device.open().as_default(), a tf.data pipeline, then the same model compiled and fit twice, the first fit
with validation data. argv: the flags below; writes a JSON report to --report."""
import argparse
import ast
import json

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

import npu_device

parser = argparse.ArgumentParser()
parser.add_argument("--report", required=True)
parser.add_argument("--profiling", type=ast.literal_eval, default=False)
parser.add_argument("--profiling_dump_path", default="/home/data")
parser.add_argument("--data_dump_flag", type=ast.literal_eval, default=False)
parser.add_argument("--data_dump_path", default="/home/data")
parser.add_argument("--data_dump_step", default="10")
parser.add_argument("--precision_mode", default="allow_mix_precision")
args = parser.parse_args()


def npu_config():
    if args.data_dump_flag:
        npu_device.global_options().dump_config.enable_dump = True
        npu_device.global_options().dump_config.dump_path = args.data_dump_path
        npu_device.global_options().dump_config.dump_step = args.data_dump_step
        npu_device.global_options().dump_config.dump_mode = "all"
    if args.profiling:
        npu_device.global_options().profiling_config.enable_profiling = True
        profiling_options = '{"output":"' + args.profiling_dump_path + '", \
                            "training_trace":"on", \
                            "task_trace":"on", \
                            "aicpu":"on", \
                            "aic_metrics":"PipeUtilization",\
                            "fp_point":"", \
                            "bp_point":""}'
        npu_device.global_options().profiling_config.profiling_options = profiling_options
    npu_device.global_options().precision_mode = args.precision_mode
    npu_device.open().as_default()


npu_config()

rng = np.random.default_rng(0)
images = rng.integers(0, 256, (16, 12, 12, 3)).astype("uint8")
labels = (images.mean(axis=(1, 2, 3)) > 127).astype("int64")
rescale = layers.Rescaling(1.0 / 255)


def prepare(x, y):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (rescale(tf.cast(a, tf.float32)), b))
    return ds.batch(8).prefetch(tf.data.AUTOTUNE)


train_ds, val_ds = prepare(images, labels), prepare(images[:8], labels[:8])
model = tf.keras.Sequential([
    layers.Conv2D(4, 3, activation="relu", input_shape=(12, 12, 3)),
    layers.Flatten(),
    layers.Dense(1, activation="sigmoid", name="head"),
])
model.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.RMSprop(1e-3), metrics=["accuracy"])
first = model.fit(train_ds, validation_data=val_ds, epochs=1, verbose=0)
model.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.RMSprop(1e-3), metrics=["accuracy"])
second = model.fit(train_ds, epochs=1, verbose=0)
with open(args.report, "w") as f:
    json.dump({"loss": [first.history["loss"][-1], second.history["loss"][-1]],
               "val_loss": first.history["val_loss"][-1]}, f)
