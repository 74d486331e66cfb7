"""NPUEstimator data-parallel training on a shared model_dir until SIGTERM; the chief saves.

NPURunConfig(hccl_timeout=5), NPUDistributedOptimizer; rank 0 saves checkpoints (only at the end:
save_checkpoints_steps is large), the others none. A hook prints 'step N' (the global step after
each run). Logs (logger "npurun", INFO) go to stderr; train() raises SystemExit(143) on SIGTERM.
"""
import logging
import os
import sys
import time

import numpy as np
from common import OUT, RANK, tf

from npurun import NPURunConfig
from npurun.distribute import NPUDistributedOptimizer
from npurun.estimator import EstimatorSpec, NPUEstimator

v1 = tf.compat.v1
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)


def input_fn():
    data = np.arange(32, dtype=np.float32).reshape([16, 2]) / 16
    return tf.data.Dataset.from_tensor_slices((data, data[:, :1])).repeat().batch(4)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", initializer=np.zeros([2, 1], np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    opt = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.01))
    return EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, global_step=v1.train.get_global_step()))


class Steps(v1.train.SessionRunHook):
    def begin(self):
        self._step = v1.train.get_global_step()

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        print(f"step {run_values.results + 1}", flush=True)
        time.sleep(0.02)


config = NPURunConfig(model_dir=os.path.join(OUT, "model"), hccl_timeout=5,
                      save_checkpoints_steps=100000 if RANK == 0 else 0, log_step_count_steps=None)
NPUEstimator(model_fn, config=config).train(input_fn, steps=100000, hooks=[Steps()])
