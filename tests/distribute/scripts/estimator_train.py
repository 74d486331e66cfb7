"""NPUEstimator data-parallel training, one rank of `npurun launch` (also the single-process reference).

argv: OUT ITERATIONS_PER_LOOP STEPS GLOBAL_BATCH [MODEL_DIR]. model_dir is OUT/model<rank> (one per rank,
a common Ascend layout), or MODEL_DIR on every rank when given. Each rank reads its shard of the data
(`dataset.shard(get_rank_size(), get_rank_id())`), batches GLOBAL_BATCH / rank size, starts from
its own initialisation (initializer seed 1 + 100 * rank) and minimises with
NPUDistributedOptimizer. A hook records the weights when the session starts (before the automatic
broadcast hook, which runs after user hooks) and when training ends, and the report lists the
rank's own listening sockets after training (scripts/listening.py).
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npurun import NPURunConfig  # noqa: E402
from npurun.distribute import NPUDistributedOptimizer, get_rank_id, get_rank_size  # noqa: E402
from npurun.estimator import EstimatorSpec, NPUEstimator  # noqa: E402

v1 = tf.compat.v1
out, loop, steps, global_batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rank, size = get_rank_id(), get_rank_size()
rng = np.random.RandomState(0)
X = rng.randn(256, 4).astype(np.float32)
Y = (X @ rng.randn(4, 1) + 0.1).astype(np.float32)


def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat()
    return dataset.shard(size, rank).batch(global_batch // size)


def model_fn(features, labels, mode):
    w1 = v1.get_variable("w1", [4, 8], initializer=v1.glorot_uniform_initializer(seed=1 + 100 * rank))
    w2 = v1.get_variable("w2", [8, 1], initializer=v1.glorot_uniform_initializer(seed=2 + 100 * rank))
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.tanh(tf.matmul(features, w1)), w2) - labels))
    opt = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.1))
    return EstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, global_step=v1.train.get_global_step()))


class Record(v1.train.SessionRunHook):
    def begin(self):
        self.variables = sorted(v1.trainable_variables(), key=lambda v: v.name)
        self.report = {}

    def after_create_session(self, session, coord):
        self.report["initial"] = [session.run(v).tolist() for v in self.variables]

    def end(self, session):
        values = [session.run(v) for v in self.variables]
        self.report["final"] = [v.tolist() for v in values]
        self.report["final_hex"] = [v.tobytes().hex() for v in values]


record = Record()
model_dir = sys.argv[5] if len(sys.argv) > 5 else os.path.join(out, f"model{rank}")
config = NPURunConfig(model_dir=model_dir, iterations_per_loop=loop,
                      save_checkpoints_steps=loop * 2, log_step_count_steps=None)
NPUEstimator(model_fn, config=config).train(input_fn, steps=steps, hooks=[record])
record.report["is_chief"] = config.is_chief
from listening import own_listening  # noqa: E402  (this folder: the script's own)

record.report["listening"] = own_listening()  # the rank's servers are still up
with open(os.path.join(out, f"rank{rank}.json"), "w") as handle:
    json.dump(record.report, handle)
print(f"rank {rank} done", flush=True)
