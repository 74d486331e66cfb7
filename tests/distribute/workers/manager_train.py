"""NPUEstimator data-parallel training on ranks a cluster manager's environment describes (Slurm's
SLURM_*, torchrun's RANK/WORLD_SIZE): no RANK_ID, RANK_SIZE or TF_CONFIG. Different initialisations
per rank; writes the rank npurun read, whether it is the chief, and the final weights."""
import os

from common import OUT, np, tf

from npurun import NPURunConfig
from npurun.distribute import NPUDistributedOptimizer, get_local_rank_id, get_rank_id, get_rank_size
from npurun.estimator import EstimatorSpec, NPUEstimator

from common import write  # noqa: E402

v1 = tf.compat.v1
RANK, SIZE = get_rank_id(), get_rank_size()
rng = np.random.RandomState(0)
X = rng.randn(64, 4).astype(np.float32)
Y = (X @ rng.randn(4, 1)).astype(np.float32)


def input_fn():
    return tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shard(SIZE, RANK).batch(8)


def model_fn(features, labels, mode):
    w = v1.get_variable("w", [4, 1], initializer=v1.glorot_uniform_initializer(seed=1 + RANK))
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    train_op = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.1)).minimize(
        loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


class FinalWeights(v1.train.SessionRunHook):
    def begin(self):
        self.variable = [v for v in v1.trainable_variables() if v.op.name == "w"][0]

    def end(self, session):
        self.value = session.run(self.variable)


final = FinalWeights()
config = NPURunConfig(model_dir=os.path.join(OUT, "model"), hccl_timeout=30, save_checkpoints_steps=3,
                      log_step_count_steps=None)
est = NPUEstimator(model_fn, config=config)
est.train(input_fn, steps=4, hooks=[final])
write({"rank": RANK, "size": SIZE, "local": get_local_rank_id(), "is_chief": config.is_chief,
       "weights_hex": final.value.tobytes().hex(), "target": est.last_plan.target}, name=f"rank{RANK}.json")
