"""`npu_device.distribute`: the adapter's collectives for TensorFlow 2 code, on npurun's collectives
(`npurun.distribute.collectives`, the ones NPUDistributedOptimizer uses).

Rules (the adapter's):
- Outside a cluster (no `npu_device.open().as_default()`, or one rank) `all_reduce` returns its
  values and `broadcast` does nothing.
- `all_reduce(values, reduction="mean", fusion=1, fusion_id=-1, group="hccl_world_group")`: a
  value or a list (None entries stay None); "mean" is the sum divided by the number of workers
  (integer values: integer division), else sum / max / min / prod; from eager code and from a
  tf.function alike (through `bridge`: npurun's session collectives).
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
from . import bridge


def _ctx():
    from . import global_npu_ctx

    return global_npu_ctx()


def _in_cluster() -> bool:
    ctx = _ctx()
    return ctx is not None and ctx.is_cluster_worker()


def all_reduce(values, reduction="mean", fusion=1, fusion_id=-1, group=WORLD_GROUP):
    if reduction not in ("mean", *collectives.REDUCTIONS):
        raise ValueError(f"npu_device.distribute.all_reduce: reduction={reduction!r}; allowed: mean, "
                         f"{', '.join(collectives.REDUCTIONS)}")
    if not _in_cluster():
        return values
    is_list = isinstance(values, (list, tuple))
    items = list(values) if is_list else [values]
    present = [tf.convert_to_tensor(v) for v in items if v is not None]
    merge = "sum" if reduction == "mean" else reduction
    reduced = bridge.run("allreduce", present, reduction=merge, fusion=fusion, fusion_id=fusion_id, group=group)
    if reduction == "mean":
        workers = _ctx().workers_num
        reduced = [r / tf.cast(workers, r.dtype) if r.dtype.is_floating else r // workers for r in reduced]
    results = [None if v is None else reduced.pop(0) for v in items]
    return results if is_list else results[0]


def broadcast(values, root_rank=0, fusion=2, fusion_id=0, group=WORLD_GROUP):
    if not _in_cluster():
        return None
    variables = list(values) if isinstance(values, (list, tuple)) else [values]
    received = bridge.run("broadcast", [v.read_value() for v in variables], root_rank=root_rank, fusion=fusion,
                          fusion_id=fusion_id, group=group)
    for variable, value in zip(variables, received):
        variable.assign(value)
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
