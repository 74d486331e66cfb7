"""A sess.run training loop that runs until stopped: one all-reduce per step, `step N pid P` printed every 10 steps."""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from npurun.distribute import cluster, hccl_ops  # noqa: E402

tf.compat.v1.disable_eager_execution()
total = hccl_ops.allreduce(tf.constant([1.0]), "sum")
session = cluster.create_session()
for step in range(100000):
    session.run(total)
    if step % 10 == 0:
        print("step", step, "pid", os.getpid(), flush=True)
    time.sleep(0.05)
