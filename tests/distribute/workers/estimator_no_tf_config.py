"""NPUEstimator on ranks from RANK_ID / RANK_SIZE only (no TF_CONFIG): data-parallel training with
NPUDistributedOptimizer from different initialisations; writes the final weights and checkpoints."""
import os

from common import OUT, RANK, np, tf, write

from npurun import NPURunConfig
from npurun.distribute import NPUDistributedOptimizer
from npurun.estimator import EstimatorSpec, NPUEstimator

v1 = tf.compat.v1
rng = np.random.RandomState(0)
X = rng.randn(64, 4).astype(np.float32)
Y = (X @ rng.randn(4, 1)).astype(np.float32)


def input_fn():
    return tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shard(2, RANK).batch(8)


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
model_dir = str(OUT / f"model{RANK}")
config = NPURunConfig(model_dir=model_dir, hccl_timeout=60, save_checkpoints_steps=2, log_step_count_steps=None)
est = NPUEstimator(model_fn, config=config)
est.train(input_fn, steps=6, hooks=[final])
checkpoints = sorted(n for n in os.listdir(model_dir) if n.startswith("model.ckpt")) if os.path.isdir(model_dir) else []
write({"is_chief": config.is_chief, "checkpoints": checkpoints, "weights_hex": final.value.tobytes().hex(),
       "tf_config": os.environ.get("TF_CONFIG"), "target": est.last_plan.target})
