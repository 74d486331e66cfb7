"""NPUEstimator in parameter-server mode, one task of `npurun launch -n 2 --ps 1` (or one process).

argv: OUT STEPS BATCH [CHIEF_DELAY]. NPURunConfig(distribute=tf.compat.v1.distribute.experimental.
ParameterServerStrategy()) when TF_CONFIG has a ps job; the ps task's train() serves until the launcher
stops it. Linear regression (noise-free), SGD 0.1; a hook writes the final weights, where the
variables live and when its session was ready (after_create_session, before any start-up hook).
CHIEF_DELAY: the chief's input_fn sleeps that many seconds, so its variables are initialised at
least that late; `input_done_at` is when its input_fn returned (before it initialises).
"""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npurun import NPURunConfig  # noqa: E402
from npurun.estimator import EstimatorSpec, NPUEstimator  # noqa: E402

v1 = tf.compat.v1
out, steps, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
chief_delay = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
timing = {}
config_json = json.loads(os.environ.get("TF_CONFIG") or "{}")
task = config_json.get("task", {"type": "worker", "index": 0})
rng = np.random.RandomState(7)
X = rng.randn(64, 3).astype(np.float32)
Y = X @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25


def input_fn():
    if (task["type"], task["index"]) in (("worker", 0), ("chief", 0)):
        time.sleep(chief_delay)
        timing["input_done_at"] = time.time()
    return tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(64, seed=task["index"]).repeat().batch(batch)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", initializer=np.zeros([3, 1], np.float32))
    b = v1.get_variable("b", initializer=np.float32(0.0))
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - labels))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


class Record(v1.train.SessionRunHook):
    def begin(self):
        graph = v1.get_default_graph()
        self.variables = {v.op.name: v for v in v1.global_variables()}
        self.devices = sorted({op.device for op in graph.get_operations() if op.type == "VarHandleOp"})

    def after_create_session(self, session, coord):
        timing["session_ready_at"] = time.time()

    def end(self, session):
        report = {name: session.run(v).tolist() for name, v in self.variables.items()}
        report["var_devices"] = self.devices
        report.update(timing)
        with open(os.path.join(out, f"{task['type']}{task['index']}.json"), "w") as handle:
            json.dump(report, handle)


options = {}
if "ps" in config_json.get("cluster", {}):
    options["distribute"] = v1.distribute.experimental.ParameterServerStrategy()
config = NPURunConfig(model_dir=os.path.join(out, "model"), save_checkpoints_steps=50, log_step_count_steps=None,
                      **options)
NPUEstimator(model_fn, config=config).train(input_fn, steps=steps, hooks=[Record()])
print(f"{task['type']} {task['index']} done", flush=True)
