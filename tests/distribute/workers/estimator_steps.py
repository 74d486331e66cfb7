"""NPUEstimator training steps until a peer dies; reports the error train() raised.

NPURunConfig(hccl_timeout=5), NPUDistributedOptimizer, iterations_per_loop=1, many steps; a hook
prints 'step N' after each step. On an error writes rank<i>.json with its type, message, cause type
and the time it was raised, and exits 1.
"""
import os
import time

import numpy as np
from common import OUT, RANK, tf, write

from npurun import NPURunConfig
from npurun.distribute import NPUDistributedOptimizer
from npurun.estimator import EstimatorSpec, NPUEstimator

v1 = tf.compat.v1


def input_fn():
    data = np.ones([8, 2], np.float32)
    return tf.data.Dataset.from_tensor_slices((data, data[:, :1])).repeat().batch(4)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", initializer=np.zeros([2, 1], np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    opt = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.01))
    return EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, global_step=v1.train.get_global_step()))


class Steps(v1.train.SessionRunHook):
    def __init__(self):
        self.count = 0

    def after_run(self, run_context, run_values):
        self.count += 1
        print(f"step {self.count}", flush=True)
        time.sleep(0.05)


config = NPURunConfig(model_dir=os.path.join(OUT, f"model{RANK}"), hccl_timeout=5, save_checkpoints_steps=0,
                      log_step_count_steps=None)
try:
    NPUEstimator(model_fn, config=config).train(input_fn, steps=100000, hooks=[Steps()])
except Exception as error:
    cause = error.__cause__
    write({"type": type(error).__name__, "message": str(error), "raised_at": time.time(),
           "cause": type(cause).__name__ if cause is not None else None})
    raise SystemExit(1)
write({"type": None})
