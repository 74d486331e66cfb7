"""Distributed training with the Ascend adapter's names: ranks, HCCL collectives, the distributed
optimizer, variable broadcast, a launcher and parameter-server mode, on TensorFlow's gRPC runtime.

Rank discovery (`get_rank_id`, `get_rank_size`, `get_local_rank_id`, `get_local_rank_size`,
groups) is plain Python; the other names import TensorFlow on first use.

Imports: `npurun.config` and the foundations (`logs`, `preemption`); never
`precision` (which builds on its collectives), `runtime` or `estimator`.

    from npurun.distribute import hccl_ops, get_rank_id, NPUDistributedOptimizer
"""
from importlib import import_module

from .ranks import (RankConfigError, create_group, destroy_group, get_group_rank_from_world_rank, get_local_rank_id,
                    get_local_rank_size, get_rank_id, get_rank_size, get_world_rank_from_group_rank)

_LAZY = {
    "hccl_ops": ("npurun.distribute.collectives", None),
    "allreduce": ("npurun.distribute.collectives", "allreduce"),
    "allgather": ("npurun.distribute.collectives", "allgather"),
    "broadcast": ("npurun.distribute.collectives", "broadcast"),
    "reduce_scatter": ("npurun.distribute.collectives", "reduce_scatter"),
    "create_session": ("npurun.distribute.cluster", "create_session"),
    "NPUDistributedOptimizer": ("npurun.distribute.optimizer", "NPUDistributedOptimizer"),
    "npu_distributed_optimizer_wrapper": ("npurun.distribute.optimizer", "npu_distributed_optimizer_wrapper"),
    "npu_allreduce": ("npurun.distribute.optimizer", "npu_allreduce"),
    "allreduce_overflow": ("npurun.distribute.optimizer", "allreduce_overflow"),
    "NPUBroadcastGlobalVariablesHook": ("npurun.distribute.hooks", "NPUBroadcastGlobalVariablesHook"),
    "broadcast_global_variables": ("npurun.distribute.hooks", "broadcast_global_variables"),
    "StartupTimeoutError": ("npurun.distribute.errors", "StartupTimeoutError"),
    "CollectiveTimeoutError": ("npurun.distribute.errors", "CollectiveTimeoutError"),
    "InitializationTimeoutError": ("npurun.distribute.errors", "InitializationTimeoutError"),
}


def __getattr__(name):
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'npurun.distribute' has no attribute {name!r}") from None
    module = import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["get_rank_id", "get_rank_size", "get_local_rank_id", "get_local_rank_size", "create_group",
           "destroy_group", "get_world_rank_from_group_rank", "get_group_rank_from_world_rank", "RankConfigError",
           *_LAZY]
