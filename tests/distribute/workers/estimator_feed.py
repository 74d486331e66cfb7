"""NPUEstimator with local_rank_id=0: rank 0 reads the training input once and feeds the local ranks.

argv: STEPS LOCAL_DEVICE_LIST. Every rank trains the same NPUEstimator script (plain SGD on a
linear model, no gradient exchange) on `Dataset.range(1000)`, whose map step logs (pid, element)
for every element it reads. A hook records the batches each rank trained on.
"""
import os
import sys

from common import OUT, RANK, tf, write

from npurun import NPURunConfig
from npurun.estimator import EstimatorSpec, NPUEstimator

v1 = tf.compat.v1
steps, devices = int(sys.argv[1]), sys.argv[2]
log = OUT / "reads.log"
seen = {}


def record(x):
    with open(log, "a") as handle:
        handle.write(f"{os.getpid()} {int(x)}\n")
    return x


def input_fn():
    read = tf.data.Dataset.range(1000).map(lambda x: tf.numpy_function(record, [x], tf.int64))
    return read.map(lambda x: (tf.reshape(tf.cast(x, tf.float32), [1]), tf.cast(x % 2, tf.float32))).repeat().batch(3)


def model_fn(features, labels, mode):
    seen["features"] = features
    w = v1.get_variable("w", [1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(features[:, 0] * w - labels))
    train_op = v1.train.GradientDescentOptimizer(1e-6).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


class Batches(v1.train.SessionRunHook):
    def __init__(self):
        self.batches = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(seen["features"])

    def after_run(self, run_context, run_values):
        self.batches.append([int(v) for v in run_values.results[:, 0]])


hook = Batches()
config = NPURunConfig(model_dir=str(OUT / f"model{RANK}"), local_rank_id=0, local_device_list=devices,
                      save_checkpoints_steps=2, log_step_count_steps=None)
NPUEstimator(model_fn, config=config).train(input_fn, steps=steps, hooks=[hook])
write({"pid": os.getpid(), "batches": hook.batches})
