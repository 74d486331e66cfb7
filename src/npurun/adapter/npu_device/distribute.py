"""`npu_device.distribute`: the adapter's collectives for TensorFlow 2 code, on npurun's collectives
(`npurun.distribute.collectives`, the ones NPUDistributedOptimizer uses).

Rules (the adapter's):
- Outside a cluster (no `npu_device.open().as_default()`, or one rank) `all_reduce` returns its
  values and `broadcast` does nothing.
- `all_reduce(values, reduction="mean", fusion=1, fusion_id=-1, group="hccl_world_group")`: a
  value or a list (None entries stay None); "mean" is the sum divided by the number of workers
  (integer values: integer division), else sum / max / min / prod. It runs inside a tf.function,
  as the adapter's does, so it works from eager code as well.
- `broadcast(variables, root_rank=0, ...)`: assigns the root rank's value to each variable.
- `npu_distributed_keras_optimizer_wrapper(optimizer, reduce_reduction="mean", ...)`: the optimizer
  (`tf.keras.optimizers.get`), whose `apply_gradients` first all-reduces the gradients.
- `shard_and_rebatch_dataset(dataset, global_bs)`: (dataset.shard(workers, worker_id),
  global_bs // workers); one worker: (dataset, global_bs); a global batch not divisible by the
  number of workers is a ValueError.
- The ranks must call these in the same order (as with HCCL).
"""
from __future__ import annotations

import tensorflow as tf

from ...distribute import collectives
from ...distribute.ranks import WORLD_GROUP


def _ctx():
    from . import global_npu_ctx

    return global_npu_ctx()


def _in_cluster() -> bool:
    ctx = _ctx()
    return ctx is not None and ctx.is_cluster_worker()


def _reduce_all(values, reduction, fusion, fusion_id, group):
    workers = _ctx().workers_num
    merge = "sum" if reduction == "mean" else reduction
    reduced = []
    for value in values:
        total = collectives.allreduce(value, merge, fusion, fusion_id, group)
        if reduction == "mean":
            total = total / tf.cast(workers, total.dtype) if total.dtype.is_floating else total // workers
        reduced.append(total)
    return reduced


def all_reduce(values, reduction="mean", fusion=1, fusion_id=-1, group=WORLD_GROUP):
    if reduction not in ("mean", *collectives.REDUCTIONS):
        raise ValueError(f"npu_device.distribute.all_reduce: reduction={reduction!r}; allowed: mean, "
                         f"{', '.join(collectives.REDUCTIONS)}")
    if not _in_cluster():
        return values
    is_list = isinstance(values, (list, tuple))
    items = list(values) if is_list else [values]
    present = [v for v in items if v is not None]
    if tf.executing_eagerly():
        reduced = tf.function(lambda vs: _reduce_all(vs, reduction, fusion, fusion_id, group))(present)
    else:
        reduced = _reduce_all(present, reduction, fusion, fusion_id, group)
    reduced = list(reduced)
    results = [None if v is None else reduced.pop(0) for v in items]
    return results if is_list else results[0]


def broadcast(values, root_rank=0, fusion=2, fusion_id=0, group=WORLD_GROUP):
    if not _in_cluster():
        return None
    variables = list(values) if isinstance(values, (list, tuple)) else [values]

    def assign_all():
        for variable in variables:
            variable.assign(collectives.broadcast(variable, root_rank, fusion, fusion_id, group))

    if tf.executing_eagerly():
        tf.function(assign_all)()
    else:
        assign_all()
    return None


def npu_distributed_keras_optimizer_wrapper(optimizer, reduce_reduction="mean", fusion=1, fusion_id=-1,
                                            group=WORLD_GROUP):
    optimizer = tf.keras.optimizers.get(optimizer)
    original = optimizer.apply_gradients

    def apply_gradients(grads_and_vars, *args, **kwargs):
        grads_and_vars = list(grads_and_vars)
        grads = all_reduce([g for g, _ in grads_and_vars], reduce_reduction, fusion, fusion_id, group)
        return original(list(zip(grads, [v for _, v in grads_and_vars])), *args, **kwargs)

    optimizer.apply_gradients = apply_gradients
    return optimizer


def shard_and_rebatch_dataset(dataset, global_bs):
    ctx = _ctx()
    if ctx is None or ctx.workers_num <= 1:
        return dataset, global_bs
    if global_bs % ctx.workers_num != 0:
        raise ValueError(f"Batch size must be divisible by num npus: {ctx.workers_num}")
    return dataset.shard(ctx.workers_num, ctx.worker_id), int(global_bs) // ctx.workers_num
