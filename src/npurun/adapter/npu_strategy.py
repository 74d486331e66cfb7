"""The adapter's tf.distribute strategy (`npu_bridge.estimator.npu.npu_strategy`), over this rank's device.

On Ascend, `NPUStrategy(device="/cpu:0")` is TensorFlow's one-device strategy with two changes: it
reports `num_replicas_in_sync` as the job's rank count (RANK_SIZE), and a dataset it distributes is
sharded by rank (`dataset.shard(rank_size, rank_id)`). It does no all-reduce of its own: gradients are
summed across ranks by NPUDistributedOptimizer, as here. The `"/cpu:0"` it names by default is the host
the adapter hands the graph from; the Ascend graph engine still trains the model on the NPU. So here the
strategy's device is the one npurun trains on (the first GPU, else the CPU), unless a script names
another device than that default.

ModelZoo uses it in 4 folders (SpineNet and XLNet pass it to NPURunConfig(train_distribute=...),
ASSEMBLED-CNN builds its run config with it, Fixmatch trains under its scope).
"""
from __future__ import annotations

from tensorflow.python.distribute import distribute_lib, one_device_strategy

from ..distribute import ranks

# The adapter's default device: its host, not where the model trains on Ascend.
_ADAPTER_HOST_DEVICE = "/cpu:0"


def _training_device() -> str:
    """Where npurun trains a model without a strategy: the first GPU, or the CPU."""
    import tensorflow as tf

    return "/device:GPU:0" if tf.config.list_physical_devices("GPU") else "/device:CPU:0"


class NPUExtended(one_device_strategy.OneDeviceExtended):
    """TensorFlow's one-device extended strategy, with the job's rank count and a dataset sharded by rank."""

    def __init__(self, container_strategy, device):
        super().__init__(container_strategy, device)

    def _experimental_distribute_dataset(self, dataset, options=None):
        return super()._experimental_distribute_dataset(
            dataset.shard(ranks.get_rank_size(), ranks.get_rank_id()), options)

    @property
    def _num_replicas_in_sync(self):
        return ranks.get_rank_size()


class NPUStrategy(distribute_lib.StrategyV1):
    """`NPUStrategy(device="/cpu:0")`: a one-device strategy on this rank's training device (see the module)."""

    def __init__(self, device=_ADAPTER_HOST_DEVICE):
        if device is None or device.lower() == _ADAPTER_HOST_DEVICE:
            device = _training_device()
        super().__init__(NPUExtended(self, device))
