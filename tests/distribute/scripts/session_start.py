"""A sess.run script's start: `cluster.create_session()` (server, peers, identity probes, barrier), one
all-reduce, then `ok RANK`."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from npurun.distribute import cluster, hccl_ops  # noqa: E402

tf.compat.v1.disable_eager_execution()
layout = cluster.read_layout()
total = hccl_ops.allreduce(tf.constant([float(layout.rank_id + 1)]), "sum")
session = cluster.create_session()
print("ok", layout.rank_id, session.run(total).tolist(), flush=True)
