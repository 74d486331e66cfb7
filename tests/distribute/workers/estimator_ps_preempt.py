"""NPUEstimator in parameter-server mode (1 ps, 2 workers) until worker 1 signals itself.

Worker 1 sends itself SIGTERM after its run SIGNAL_AT (argv[1]) and prints 'signalled'; every
worker prints 'step N' after each run (a short sleep keeps the workers' pace similar). The chief
(worker 0) saves checkpoints only at the end. The ps task's train() serves until it is signalled.
Logs (logger "npurun", INFO) go to stderr.
"""
import logging
import os
import signal
import sys
import time

import numpy as np
from common import OUT, RANK, tf

from npurun import NPURunConfig
from npurun.distribute import cluster
from npurun.estimator import EstimatorSpec, NPUEstimator

v1 = tf.compat.v1
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
SIGNAL_AT = int(sys.argv[1])
is_ps = cluster.read_layout().task_type == "ps"


def input_fn():
    x = np.random.RandomState(7).randn(64, 3).astype(np.float32)
    y = x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", initializer=np.zeros([3, 1], np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    train_op = v1.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


class Steps(v1.train.SessionRunHook):
    def __init__(self):
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1
        print(f"step {self.runs}", flush=True)
        if RANK == 1 and not is_ps and self.runs == SIGNAL_AT:
            print("signalled", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.02)


config = NPURunConfig(model_dir=os.path.join(OUT, "model"), log_step_count_steps=None, save_checkpoints_steps=100000,
                      distribute=v1.distribute.experimental.ParameterServerStrategy())
NPUEstimator(model_fn, config=config).train(input_fn, steps=100000, hooks=[Steps()])
