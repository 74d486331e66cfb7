"""HCCL's collective operations (`npu_bridge.hccl.hccl_ops`) on TensorFlow's collective ops.

Same names, arguments and results as the Ascend adapter:
`allreduce(tensor, reduction, fusion=1, fusion_id=-1, group="hccl_world_group")`,
`allgather(tensor, rank_size, group=..., fusion=0, fusion_id=-1)`,
`broadcast(tensor, root_rank, fusion=2, fusion_id=0, group=...)` (a list of tensors in, a list
out, as in the adapter; a single tensor gives a single tensor),
`reduce_scatter(tensor, reduction, rank_size, group=..., fusion=0, fusion_id=-1)`,
`reduce(tensor, reduction, root_rank, ...)`.

Mechanism: TensorFlow's v2 collective ops (CollectiveReduceV2, CollectiveGatherV2,
CollectiveBcastSendV2 / CollectiveBcastRecvV2) over the gRPC runtime: ring on CPU, NCCL for GPU
tensors (the GPU path is untested here: the project's machines have no GPU). Reduce-scatter is
CollectiveReduceScatterV2 for GPU tensors and an all-reduce plus a slice otherwise (TensorFlow has
no ring reduce-scatter). hccl_timeout (see `settings`) bounds each session run that holds
collectives (`cluster.configure`: the session's operation_timeout_in_ms): a dead peer gives
DeadlineExceededError (or UnavailableError) after at most that long, never a hang. The ops
themselves carry `timeout_seconds=0` unless a call passes `timeout=`: on TensorFlow's runtime a
positive op timeout starts two detached threads per op run (CompleteParamsAsync and ExecuteAsync
each call Env::SchedClosureAfter, which on POSIX is a new thread that sleeps the whole timeout even
when the op finished at once), so 1800 s at a few hundred steps/s would pile up hundreds of
thousands of threads and crash the process.

Rules:
- `reduction` is one of sum, max, min, prod.
- The group must exist (`create_group`); its size must equal `rank_size` where that is passed.
- `reduce_scatter`: the first dimension must be a multiple of the rank size.
- `broadcast`: shapes must be fully defined (non-root ranks allocate the result from it).
- With one rank in the group every operation returns its input (as HCCL does on one device).
- The ranks of a group must create that group's collectives in the same order (as with HCCL):
  each op gets the next instance key of its group's counter, and ranks match ops by that key.
- `fusion` / `fusion_id` are validated and recorded; fusing all-reduces is done by the
  distributed optimizer (one grouped all-reduce unless hcom_parallel), not per call.
"""
from __future__ import annotations

import itertools
import threading
from typing import Optional

import tensorflow as tf
from tensorflow.python.ops import collective_ops

from . import ranks

REDUCTIONS = {"sum": "Add", "max": "Max", "min": "Min", "prod": "Mul"}

# Instance keys, one counter per group key: a collective is identified by (group key, instance key),
# and ranks outside a group never create its ops, so a shared counter would drift between ranks.
# Keys below 1000 are left for callers' own collectives.
_keys: dict = {}
_keys_lock = threading.Lock()


def next_instance_key(group_key: int) -> int:
    with _keys_lock:
        counter = _keys.setdefault(group_key, itertools.count(1000))
        return next(counter)


def _hint() -> str:
    # CPU-only: ring over the task servers. With GPUs: "auto", so that TensorFlow takes NCCL for
    # GPU tensors (ConfigProto.experimental.collective_nccl, see cluster.configure) and ring for
    # CPU ones (a CPU tensor has no NCCL implementation).
    return "auto" if tf.config.list_physical_devices("GPU") else "ring"


def _merge_op(reduction: str) -> str:
    try:
        return REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"reduction: got {reduction!r}; allowed: {', '.join(REDUCTIONS)}") from None


def _check_fusion(fusion, allowed: tuple, op: str) -> None:
    if fusion not in allowed:
        raise ValueError(f"{op}: fusion got {fusion!r}; allowed: {', '.join(map(str, allowed))}")


def _group(group: str, rank_size: Optional[int] = None, op: str = "") -> tuple[int, int]:
    """(group size, group key); checks a given rank_size against the group."""
    size = ranks.get_rank_size(group)
    if rank_size is not None and rank_size != size:
        raise ValueError(f"{op}: rank_size={rank_size} but group {group!r} has {size} ranks")
    return size, ranks.group_key(group)


def _timeout(timeout) -> float:
    # 0 = no TensorFlow watchdog thread per op run (see the module doc); hccl_timeout is the run deadline.
    return float(timeout) if timeout is not None else 0.0


def allreduce(tensor, reduction, fusion=1, fusion_id=-1, group=ranks.WORLD_GROUP, *, timeout=None):
    """Reduce `tensor` over the ranks of `group`; every rank gets the result.

    `timeout` (seconds, an npurun extension) overrides hccl_timeout for this op.
    """
    merge = _merge_op(reduction)
    _check_fusion(fusion, (0, 1, 2), "allreduce")
    size, key = _group(group, op="allreduce")
    tensor = tf.convert_to_tensor(tensor)
    if size == 1:
        return tf.identity(tensor)
    if reduction != "sum" and tensor.dtype == tf.bool:
        raise ValueError("allreduce: bool tensors are not supported; cast to int32")
    result = collective_ops.all_reduce_v2(tensor, size, key, next_instance_key(key), merge_op=merge, final_op="Id",
                                          communication_hint=_hint(), timeout=_timeout(timeout))
    result.op._set_attr("_npurun_fusion", tf.compat.v1.AttrValue(i=int(fusion)))
    result.op._set_attr("_npurun_fusion_id", tf.compat.v1.AttrValue(i=int(fusion_id)))
    return result


def allgather(tensor, rank_size, group=ranks.WORLD_GROUP, fusion=0, fusion_id=-1, *, timeout=None):
    """Concatenate every rank's `tensor` along the first dimension, in rank order (scalars become [n])."""
    _check_fusion(fusion, (0, 2), "allgather")
    size, key = _group(group, rank_size, "allgather")
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        tensor = tf.reshape(tensor, [1])
    if size == 1:
        return tf.identity(tensor)
    return collective_ops.all_gather_v2(tensor, size, key, next_instance_key(key), communication_hint=_hint(),
                                        timeout=_timeout(timeout))


def broadcast(tensor, root_rank, fusion=2, fusion_id=0, group=ranks.WORLD_GROUP, *, timeout=None):
    """Every rank gets the root rank's value. A list in gives a list out (the adapter's form)."""
    _check_fusion(fusion, (0, 2), "broadcast")
    if isinstance(tensor, (list, tuple)):
        return [broadcast(t, root_rank, fusion, fusion_id, group, timeout=timeout) for t in tensor]
    size, key = _group(group, op="broadcast")
    if not 0 <= root_rank < size:
        raise ValueError(f"broadcast: root_rank={root_rank} is not a rank of group {group!r} (0..{size - 1})")
    if isinstance(tensor, tf.Variable):
        tensor = tensor.read_value()
    tensor = tf.convert_to_tensor(tensor)
    if size == 1:
        return tf.identity(tensor)
    if not tensor.shape.is_fully_defined():
        raise ValueError(f"broadcast: the shape of {tensor.name} must be fully defined; got {tensor.shape}")
    instance = next_instance_key(key)
    if ranks.get_rank_id(group) == root_rank:
        return collective_ops.broadcast_send_v2(tensor, size, key, instance, communication_hint=_hint(),
                                                timeout=_timeout(timeout))
    # The non-root ranks still read `tensor` nowhere: only its shape and dtype are used.
    return collective_ops.broadcast_recv_v2(tensor.shape.as_list(), tensor.dtype, size, key, instance,
                                            communication_hint=_hint(), timeout=_timeout(timeout))


def reduce_scatter(tensor, reduction, rank_size, group=ranks.WORLD_GROUP, fusion=0, fusion_id=-1, *,
                   timeout=None):
    """Reduce over the ranks, then rank i keeps the i-th of `rank_size` equal slices of the first dimension."""
    merge = _merge_op(reduction)
    _check_fusion(fusion, (0, 2), "reduce_scatter")
    size, key = _group(group, rank_size, "reduce_scatter")
    tensor = tf.convert_to_tensor(tensor)
    first = tensor.shape[0] if tensor.shape.rank else None
    if tensor.shape.rank == 0 or (first is not None and first % size):
        raise ValueError(f"reduce_scatter: the first dimension of {tensor.shape} must be a multiple of the rank "
                         f"size {size}")
    if size == 1:
        return tf.identity(tensor)
    if "GPU" in (tensor.device or "").upper():
        return tf.raw_ops.CollectiveReduceScatterV2(
            input=tensor, group_size=size, group_key=key, instance_key=next_instance_key(key), ordering_token=[],
            merge_op=merge, final_op="Id", communication_hint="nccl", timeout_seconds=_timeout(timeout))
    # TensorFlow implements reduce-scatter for NCCL (GPU tensors) only: otherwise all-reduce, then
    # keep this rank's slice (same result, the whole tensor on the wire).
    reduced = collective_ops.all_reduce_v2(tensor, size, key, next_instance_key(key), merge_op=merge, final_op="Id",
                                           communication_hint=_hint(), timeout=_timeout(timeout))
    return tf.split(reduced, size, axis=0)[ranks.get_rank_id(group)]


def reduce(tensor, reduction, root_rank, fusion=0, fusion_id=-1, group=ranks.WORLD_GROUP, *, timeout=None):
    """Reduce to `root_rank`. Implemented as an all-reduce: the other ranks receive the result too."""
    size, _ = _group(group, op="reduce")
    if not 0 <= root_rank < size:
        raise ValueError(f"reduce: root_rank={root_rank} is not a rank of group {group!r} (0..{size - 1})")
    return allreduce(tensor, reduction, fusion=0, group=group, timeout=timeout)


BARRIER_GROUP_KEY = 2 ** 31 - 1  # the world's ranks again, under a key user groups never get


def barrier(timeout=None, payload=None):
    """An op that completes once every rank of the world group ran it (an all-reduce of one scalar).

    Its own group key keeps its instance keys apart from the user's collectives, so a barrier
    matches across ranks whatever groups each rank built before. With `payload` (a list of int32
    values or an int32 tensor, the same length on every rank) the barrier is the sum all-reduce of that vector and
    this returns the summed tensor (its value is what every rank contributed, added up).
    """
    size = ranks.get_rank_size()
    if payload is None:
        one = tf.constant(1, tf.int32)
    else:
        one = payload if tf.is_tensor(payload) else tf.constant(list(payload), tf.int32)
    if size == 1:
        summed = tf.identity(one)
        return summed.op if payload is None else summed
    summed = collective_ops.all_reduce_v2(one, size, BARRIER_GROUP_KEY, next_instance_key(BARRIER_GROUP_KEY),
                                          merge_op="Add", communication_hint=_hint(), timeout=_timeout(timeout))
    return summed.op if payload is None else summed


def _allreduce_grad(op, grad):
    """As the adapter registers for HcomAllReduce: the gradient of a sum over ranks is the sum over
    ranks of the upstream gradients. Only sum all-reduces are differentiable."""
    if op.get_attr("merge_op") != b"Add":
        raise LookupError("only sum all-reduces have a gradient")
    size = int(tf.get_static_value(op.inputs[1]))
    key = int(tf.get_static_value(op.inputs[2]))
    summed = collective_ops.all_reduce_v2(grad, size, key, next_instance_key(key), merge_op="Add",
                                          communication_hint=op.get_attr("communication_hint").decode(),
                                          timeout=op.get_attr("timeout_seconds"))
    return [summed] + [None] * (len(op.inputs) - 1)


try:
    tf.RegisterGradient("CollectiveReduceV2")(_allreduce_grad)
except KeyError:  # a TensorFlow that registers its own gradient keeps it
    pass
