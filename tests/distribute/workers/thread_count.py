"""Data-parallel sess.run training (gradient all-reduce every step); records this rank's thread
count (/proc/self/task) after WARMUP steps and after STEPS steps, and the trained weights."""
import os

from common import RANK, tf, write

from npurun.distribute import NPUDistributedOptimizer, cluster

steps = int(os.environ.get("STEPS", "300"))
warmup = int(os.environ.get("WARMUP", "50"))
v1 = tf.compat.v1


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


weights = v1.get_variable("w", initializer=tf.zeros([2]))
x = tf.constant([[1.0 + RANK, 2.0]])  # each rank its own data: the averaged gradient differs from either
loss = tf.reduce_sum(tf.square(tf.matmul(x, tf.reshape(weights, [2, 1])) - 1.0))
train = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.01)).minimize(loss)
session = cluster.create_session(timeout=30)
session.run(v1.global_variables_initializer())
counts = {}
for step in range(1, steps + 1):
    session.run(train)
    if step in (warmup, steps):
        counts[step] = threads()
write({"threads": counts, "weights": session.run(weights), "deadline_ms": session._config.operation_timeout_in_ms})
