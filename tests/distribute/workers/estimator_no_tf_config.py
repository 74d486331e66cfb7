"""NPUEstimator on ranks from RANK_ID / RANK_SIZE only (no TF_CONFIG): data-parallel training with
NPUDistributedOptimizer from different initialisations; writes the final weights and checkpoints.

model_dir: OUT/model<rank>, or MODEL_DIR on every rank when set. PRIVATE_MODEL_DIR=1: this rank first
enters a mount namespace of its own and mounts a fresh tmpfs over MODEL_DIR, so it sees another, empty
directory under the chief's path (as a local disk per host does); needs root."""
import ctypes
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


def private_mount(path):
    # a forked rank is single-threaded: unshare(CLONE_NEWNS) is allowed; "/" made private first, so the
    # tmpfs stays in this process's namespace
    libc = ctypes.CDLL(None, use_errno=True)
    for result in (libc.unshare(0x00020000),  # CLONE_NEWNS
                   libc.mount(b"none", b"/", None, 0x4000 | (1 << 18), None),  # MS_REC | MS_PRIVATE
                   libc.mount(b"npurun-test", path.encode(), b"tmpfs", 0, None)):
        if result != 0:
            raise OSError(ctypes.get_errno(), f"private tmpfs over {path}")


final = FinalWeights()
model_dir = os.environ.get("MODEL_DIR") or str(OUT / f"model{RANK}")
if os.environ.get("PRIVATE_MODEL_DIR") == "1":
    private_mount(model_dir)
config = NPURunConfig(model_dir=model_dir, hccl_timeout=60, save_checkpoints_steps=2, log_step_count_steps=None)
est = NPUEstimator(model_fn, config=config)
est.train(input_fn, steps=6, hooks=[final])
checkpoints = sorted(n for n in os.listdir(model_dir) if n.startswith("model.ckpt")) if os.path.isdir(model_dir) else []
write({"is_chief": config.is_chief, "checkpoints": checkpoints, "weights_hex": final.value.tobytes().hex(),
       "tf_config": os.environ.get("TF_CONFIG"), "target": est.last_plan.target})
