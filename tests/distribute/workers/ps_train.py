"""Parameter-server training of a linear regression: a ps task serves, workers train asynchronously.

argv: STEPS BATCH. Workers: variables placed by ps.device_setter(); the chief (worker 0) waits
CHIEF_INIT_DELAY seconds (env, default 0) after the start-up and initialises them, worker 1 waits
for that (ps.wait_for_initialization) and never runs an initializer; plain SGD on this worker's
shard for STEPS steps, a collective barrier between the workers, then the final weights (read from
the ps) are written with the times of the chief's initialisation and of worker 1's wait. The ps
task serves until worker 0 writes OUT/done.
"""
import os
import sys
import time

import numpy as np
from common import OUT, RANK, tf, write

from npurun.distribute import cluster, get_rank_size, ps

v1 = tf.compat.v1
layout = cluster.read_layout()
if layout.task_type == "ps":
    cluster.ensure_server(None, layout)
    while not (OUT / "done").exists():
        time.sleep(0.1)
    sys.exit(0)

steps, batch = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.RandomState(7)
X = rng.randn(64, 3).astype(np.float32)
W_TRUE = np.array([[1.5], [-2.0], [0.5]], np.float32)
Y = X @ W_TRUE + 0.25
n = get_rank_size()
shard_x, shard_y = X[RANK::n], Y[RANK::n]

graph = tf.Graph()
with graph.as_default(), v1.device(ps.device_setter(layout)):
    x = v1.placeholder(tf.float32, [batch, 3])
    y = v1.placeholder(tf.float32, [batch, 1])
    w = v1.get_variable("w", initializer=np.zeros([3, 1], np.float32))
    b = v1.get_variable("b", initializer=np.float32(0.0))
    step = v1.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    init = v1.global_variables_initializer()
    done = cluster.barrier_op(60)
    read = cluster.barrier_op(60)
devices = sorted({(op.type, op.device) for op in graph.get_operations() if op.type == "VarHandleOp"})
session = cluster.create_session(graph=graph)
timing = {}
if ps.is_chief(layout):
    time.sleep(float(os.environ.get("CHIEF_INIT_DELAY", "0")))
    timing["init_started_at"] = time.time()
    session.run(init)
else:
    timing["waited"] = ps.wait_for_initialization(session)
    timing["ready_at"] = time.time()
for i in range(steps):
    rows = [(i * batch + k) % len(shard_x) for k in range(batch)]
    session.run(train_op, {x: shard_x[rows], y: shard_y[rows]})
session.run(done)  # both workers finished: the ps holds the final values
report = {"w": session.run(w).tolist(), "b": float(session.run(b)), "global_step": int(session.run(step)),
          "var_devices": [d for _, d in devices], **timing}
session.run(read)  # both workers have read them: the ps may stop
write(report)
if RANK == 0:
    (OUT / "done").write_text("1")
