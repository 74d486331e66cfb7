"""Every collective with known inputs; writes what this rank received."""

from common import RANK, tf, write

from npurun.distribute import cluster, create_group, get_rank_size, hccl_ops

n = get_rank_size()
x = tf.constant([RANK + 1.0, 10.0 * (RANK + 1)])
ops = {
    "sum": hccl_ops.allreduce(x, "sum"),
    "max": hccl_ops.allreduce(x, "max"),
    "min": hccl_ops.allreduce(x, "min"),
    "prod": hccl_ops.allreduce(x, "prod"),
    "int_sum": hccl_ops.allreduce(tf.constant([RANK], tf.int32), "sum"),
    "gather": hccl_ops.allgather(tf.fill([RANK * 0 + 2, 1], float(RANK)), n),
    "bcast_list": hccl_ops.broadcast([tf.constant([RANK * 1.0, -1.0]), tf.constant(7 * RANK)], root_rank=n - 1),
    "scatter": hccl_ops.reduce_scatter(tf.reshape(tf.range(2 * n, dtype=tf.float32) * (RANK + 1), [2 * n, 1]),
                                       "sum", n),
}
if n == 3:
    # A user group without rank 1: only its members create and run it.
    if RANK != 1:
        create_group("ends", 2, [0, 2])
        ops["group_sum"] = hccl_ops.allreduce(tf.constant([RANK + 1.0]), "sum", group="ends")
        ops["group_bcast"] = hccl_ops.broadcast(tf.constant([RANK * 1.0]), root_rank=1, group="ends")
session = cluster.create_session(timeout=20)
write(session.run(ops))
