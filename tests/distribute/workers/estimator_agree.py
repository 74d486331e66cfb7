"""Data-parallel NPUEstimator training through a list of preemption phases, in one pair of processes.

argv[1]: a JSON list of phases, run in order on every rank. A phase:
  {"name", "model": model_dir name under OUT, "ipl": iterations_per_loop, "steps": train(steps=),
   "max_steps": train(max_steps=) (instead of steps), "save_every": the chief's save_checkpoints_steps,
   "signals": {"<rank>": [how, at, signal name]}, "last": true to let SystemExit end the process,
   "sharded": true for dataset.shard(2, rank) before a shuffle buffer (else every rank reads the
   same global batches and model_fn keeps this rank's half)}
How a rank signals itself (deterministic: counted in runs or steps of this phase, not in time):
  "between": after run `at` (a hook's after_run); "inside": while running step `at` (a
  numpy_function in model_fn: the run is in flight); "save": in the chief's before_save of its
  `at`-th checkpoint of the phase (the global step it saves is recorded as "fired_step"); "kill":
  SIGKILL after run `at`.
Each rank writes rank<R>.json: per phase the SystemExit code (0: train returned), the global step
of the newest checkpoint before the phase (chief only), the npurun log lines, and the variables
after the phase (chief only, from its checkpoint), the newest checkpoint
after it and the seconds train() took. hccl_timeout=5.
"""
import json
import logging
import os
import re
import signal
import sys
import time

import numpy as np
from common import OUT, RANK, tf, write

from npurun import NPURunConfig
from npurun.distribute import NPUDistributedOptimizer
from npurun.estimator import EstimatorSpec, NPUEstimator, checkpoints

v1 = tf.compat.v1
PHASES = json.loads(sys.argv[1])


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


lines = Lines()
logging.getLogger("npurun").addHandler(lines)
logging.getLogger("npurun").setLevel(logging.DEBUG)
trigger = {"how": None, "at": None, "signum": None, "count": 0}


def fire():
    os.kill(os.getpid(), signal.SIGKILL if trigger["how"] == "kill" else trigger["signum"])


def sharded_input_fn():
    # The usual data-parallel pipeline: each rank its shard, then a shuffle buffer, so the input
    # position (buffer included) differs between ranks: resuming is exact only if every rank
    # restores its own (estimator/rank_input.py).
    data = np.arange(64, dtype=np.float32).reshape([32, 2]) / 32
    dataset = tf.data.Dataset.from_tensor_slices((data, data[:, :1] * 2 - data[:, 1:]))
    return dataset.shard(2, RANK).shuffle(16, seed=7, reshuffle_each_iteration=True).repeat().batch(4)


def input_fn():
    # Every rank reads the same shuffled stream of global batches of 8 and model_fn keeps this
    # rank's half: the input position (buffers included) does not depend on the rank, so the
    # chief's checkpointed position is every rank's and resuming is exact on every rank. (With
    # dataset.shard(2, rank) or a rank-dependent map, rank 1 would resume from the chief's
    # position: see docs/distributed.md.)
    data = np.arange(64, dtype=np.float32).reshape([32, 2]) / 32
    dataset = tf.data.Dataset.from_tensor_slices((data, data[:, :1] * 2 - data[:, 1:]))
    return dataset.shuffle(32, seed=7, reshuffle_each_iteration=True).repeat().batch(8)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", initializer=np.zeros([2, 1], np.float32))
    b = v1.get_variable("b", initializer=np.zeros([1], np.float32))

    def inside():
        trigger["count"] += 1
        if trigger["how"] == "inside" and trigger["count"] == trigger["at"]:
            fire()
        return np.int32(0)

    probe = tf.numpy_function(inside, [], tf.int32, stateful=True)
    if not SHARDED:
        features, labels = features[4 * RANK:4 * RANK + 4], labels[4 * RANK:4 * RANK + 4]
    with tf.control_dependencies([probe]):
        predictions = tf.matmul(features, w) + b
    loss = tf.reduce_mean(tf.square(predictions - labels))
    opt = NPUDistributedOptimizer(v1.train.MomentumOptimizer(0.05, 0.9))
    return EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, global_step=v1.train.get_global_step()))


class Between(v1.train.SessionRunHook):
    def __init__(self):
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1
        if self.runs == trigger["at"]:
            fire()


class DuringSave(v1.train.CheckpointSaverListener):
    def __init__(self):
        self.saves = 0

    def before_save(self, session, global_step_value):
        self.saves += 1
        if self.saves == trigger["at"]:
            trigger["fired_step"] = int(global_step_value)
            fire()


results = []
SHARDED = False
for phase in PHASES:
    SHARDED = phase.get("sharded", False)
    how, at, name = phase.get("signals", {}).get(str(RANK), [None, None, None])
    trigger.update(how=how, at=at, signum=getattr(signal, name) if name else None, count=0, fired_step=None)
    ipl = phase.get("ipl", 1)
    model_dir = os.path.join(OUT, phase["model"])
    config = NPURunConfig(model_dir=model_dir, hccl_timeout=5, iterations_per_loop=ipl,
                          save_checkpoints_steps=phase.get("save_every", 100000) if RANK == 0 else 0,
                          log_step_count_steps=None)
    newest = checkpoints.latest_checkpoint(model_dir) if RANK == 0 else None
    record = {"name": phase["name"], "start": checkpoints.checkpoint_step(newest) if newest else 0, "code": 0}
    lines.lines = []
    hooks = [Between()] if how in ("between", "kill") else []
    listeners = [DuringSave()] if how == "save" else []
    estimator = NPUEstimator(model_fn, config=config)
    began = time.monotonic()
    try:
        estimator.train(sharded_input_fn if SHARDED else input_fn, steps=phase.get("steps"), max_steps=phase.get("max_steps"), hooks=hooks,
                        saving_listeners=listeners)
    except SystemExit as stopped:
        record["code"] = stopped.code
        if phase.get("last"):
            record.update(lines=list(lines.lines), seconds=time.monotonic() - began)
            results.append(record)
            write(results)
            raise
    record.update(lines=list(lines.lines), seconds=time.monotonic() - began, fired_step=trigger["fired_step"])
    stopped_at = [int(m.group(1)) for m in map(re.compile(r"training stopped at global step (\d+)").search, lines.lines)
                  if m]
    if RANK != 0 and stopped_at:
        # A real restart comes after the chief finished its save; here the next phase follows at once,
        # so wait for the chief's checkpoint of the stop (else this rank would restore the one before).
        deadline = time.monotonic() + 60
        while checkpoints.checkpoint_step(checkpoints.latest_checkpoint(model_dir) or "") != stopped_at[0]:
            assert time.monotonic() < deadline, "the chief never saved the stop step"
            time.sleep(0.05)
    if RANK == 0:
        record["w"] = estimator.get_variable_value("w").tolist()
        record["b"] = estimator.get_variable_value("b").tolist()
        record["global_step"] = int(estimator.get_variable_value("global_step"))
        record["newest"] = checkpoints.latest_checkpoint(model_dir)
    results.append(record)
    write(results)
