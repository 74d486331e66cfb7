"""npurun's collectives (`npurun.distribute.collectives`, NPUDistributedOptimizer's) for TensorFlow 2 code.

Why a bridge: npurun's collectives run in tf.compat.v1 sessions on each rank's TensorFlow server
(gRPC), with the start-up barrier, hccl_timeout deadlines and errors of `npurun.distribute.cluster`.
TensorFlow 2's eager context would need its own collective cluster beside that (measured here:
TF 2.21's eager collectives between two local tasks time out in group resolution), so eager
code and tf.function reach the same session collectives through this module instead.

Rules:
- One graph and one `DistributedSession` per process (`cluster.create_session`: server, bounded wait
  for the peers, start-up barrier), created by `npu_device.open()` when RANK_SIZE > 1.
- Each distinct request (operation, reduction / root, dtypes and shapes, group) builds its
  collectives once, in the order requests arrive; ranks must make requests in the same order (as
  with HCCL), and a built request is re-run with new values (fed through placeholders).
- A request of several tensors runs as one session run. From a tf.function it runs through a
  `tf.numpy_function` (the values go to the host and back).
"""
from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()
_bridge = None


class _Bridge:
    def __init__(self):
        import tensorflow as tf

        from ...distribute.cluster import create_session

        self.graph = tf.Graph()
        self.session = create_session(graph=self.graph)
        self.built = {}
        self.lock = threading.Lock()

    def _build(self, key, arrays, make):
        import tensorflow as tf

        entry = self.built.get(key)
        if entry is None:
            with self.graph.as_default():
                feeds = [tf.compat.v1.placeholder(a.dtype, a.shape) for a in arrays]
                entry = self.built[key] = (feeds, make(feeds))
        return entry

    def run(self, kind: str, arrays, **params):
        from ...distribute import collectives

        arrays = [np.asarray(a) for a in arrays]
        key = (kind, tuple(sorted(params.items())), tuple((a.dtype.str, a.shape) for a in arrays))

        def make(feeds):
            if kind == "allreduce":
                return [collectives.allreduce(f, params["reduction"], params["fusion"], params["fusion_id"],
                                              params["group"]) for f in feeds]
            return [collectives.broadcast(f, params["root_rank"], params["fusion"], params["fusion_id"],
                                          params["group"]) for f in feeds]

        with self.lock:
            feeds, outputs = self._build(key, arrays, make)
            return self.session.run(outputs, dict(zip(feeds, arrays)))


def start() -> None:
    """Join the ranks (open() with several ranks)."""
    global _bridge
    with _lock:
        if _bridge is None:
            _bridge = _Bridge()


def run(kind: str, values, **params):
    """The collective `kind` ("allreduce" / "broadcast") of `values` (tensors), as tensors (module rules)."""
    import tensorflow as tf

    if _bridge is None:
        raise RuntimeError("npu_device.distribute: collectives need npu_device.open() first (several ranks)")
    values = [tf.convert_to_tensor(v) for v in values]
    if tf.executing_eagerly():
        results = _bridge.run(kind, [v.numpy() for v in values], **params)
        return [tf.convert_to_tensor(r) for r in results]
    outputs = tf.numpy_function(lambda *arrays: _bridge.run(kind, arrays, **params), values,
                                Tout=[v.dtype for v in values], stateful=True, name=f"npu_device_{kind}")
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    for output, value in zip(outputs, values):
        output.set_shape(value.shape)
    return list(outputs)
