"""local_rank_id / local_device_list: one process per host reads the input and feeds the local ranks.

Mechanism: the tf.data service. The rank whose local rank id is `local_rank_id` (the feeding
rank) runs a tf.data `DispatchServer` and `WorkerServer` in its own process; the input pipeline
runs there, once per host. Every local rank listed in `local_device_list` replaces its input by
`tf.data.experimental.service.distribute(ShardingPolicy.OFF, ..., consumer_index=i,
num_consumers=len(local_device_list))`: coordinated reads, where the pipeline's batches are dealt
round-robin, batch k to consumer k mod n. So every batch is produced once on the host and used by
exactly one local rank (the de-duplication): the input_fn must not shard by rank itself.

Rules:
- `apply(dataset)` is the integration point: the Estimator (and sess.run scripts) pass the
  training input through it; without local_rank_id it returns the dataset unchanged.
- `local_device_list` names local devices, i.e. local rank ids (device i is the local rank i of
  the host); None means every local rank of the host. Ranks not in the list read their own input.
- Both must be < the host's local rank count (`ValueError` naming the option otherwise).
- The dataset must repeat forever (coordinated reads require it): the training length comes from
  steps / max_steps.
- Address: the dispatcher listens on this host at port `NPURUN_FEED_PORT` (set by `npurun
  launch`), else at the feeding rank's TensorFlow server port + 1.
- All local ranks must call `apply` the same number of times in the same order (each call is a
  tf.data service job named by its call number).
- NPUEstimator passes its training input through `apply` and does not checkpoint that input's
  position (a tf.data service read has none); its training ends with a barrier of all ranks
  (`FeedEndHook`), so the feeding rank outlives the others' last read.
"""
from __future__ import annotations

import itertools
import os
from typing import Optional

import tensorflow as tf

from . import cluster, ranks, settings

_service = {}  # the feeding rank's servers, kept alive for the process's lifetime
_calls = itertools.count()


def _device_list(value) -> Optional[tuple]:
    if value is None:
        return None
    if isinstance(value, str):
        from ..config.parsers import parse_device_list

        return parse_device_list(value)
    return tuple(int(v) for v in value)


def resolve(local_rank_id=None, local_device_list=None):
    """(feeding local rank, consumer local ranks in order, this rank's local id) on this host, or None."""
    current = settings.current()
    feeder = current.local_rank_id if local_rank_id is None else local_rank_id
    if feeder is None:
        return None
    wanted = _device_list(current.local_device_list if local_device_list is None else local_device_list)
    info = ranks.read_ranks()
    size = info.local_rank_size
    if not 0 <= feeder < size:
        raise ValueError(f"NPURunConfig option 'local_rank_id': got {feeder}; this host has {size} local rank(s) "
                         f"(allowed: 0..{size - 1})")
    consumers = tuple(range(size)) if wanted is None else wanted
    bad = [d for d in consumers if d >= size]
    if bad:
        raise ValueError(f"NPURunConfig option 'local_device_list': device(s) {bad} are not local ranks of this host "
                         f"({size} local rank(s): 0..{size - 1})")
    return feeder, consumers, info.local_rank_id


def address(feeder_local: int) -> str:
    """host:port of this host's dispatcher (see the module rules)."""
    layout = cluster.read_layout()
    info = ranks.read_ranks()
    feeder_rank = [r for r, host in enumerate(info.hosts) if host == info.hosts[info.rank_id]][feeder_local]
    host, port = layout.cluster[layout.rank_tasks[feeder_rank][0]][layout.rank_tasks[feeder_rank][1]].rsplit(":", 1)
    text = os.environ.get("NPURUN_FEED_PORT", "").strip()
    if text:
        if not (text.isascii() and text.isdigit()) or len(text) > 5 or not 0 < int(text) < 65536:
            raise ValueError(f"environment variable NPURUN_FEED_PORT: got {text!r}; allowed: a port number")
        return f"{host}:{int(text)}"
    return f"{host}:{int(port) + 1}"


def start_service(target: str):
    """Start this process's dispatcher (on `target`'s port) and worker, once; returns the dispatcher."""
    if "dispatcher" in _service:
        return _service["dispatcher"]
    service = tf.data.experimental.service
    port = int(target.rsplit(":", 1)[1])
    dispatcher = service.DispatchServer(service.DispatcherConfig(port=port))
    worker = service.WorkerServer(service.WorkerConfig(dispatcher_address=target, port=0))
    _service.update(dispatcher=dispatcher, worker=worker)
    from . import exposure

    ports = [port]
    worker_address = getattr(worker, "_address", "")  # "localhost:<port>"; TensorFlow binds 0.0.0.0 there
    if worker_address.rpartition(":")[2].isascii() and worker_address.rpartition(":")[2].isdigit():
        ports.append(int(worker_address.rpartition(":")[2]))
    exposure.warn_if_exposed("this host's tf.data feeding service (dispatcher and worker)", ports,
                             speaker=ranks.read_ranks().rank_id == 0)
    return dispatcher


def apply(dataset, local_rank_id=None, local_device_list=None):
    """The dataset this rank should train on (see the module rules)."""
    resolved = resolve(local_rank_id, local_device_list)
    if resolved is None:
        return dataset
    feeder, consumers, me = resolved
    job = f"npurun_feed_{next(_calls)}"
    target = address(feeder)
    if me == feeder:
        start_service(target)
    if me not in consumers:
        return dataset
    service = tf.data.experimental.service
    return dataset.apply(service.distribute(service.ShardingPolicy.OFF, "grpc://" + target, job_name=job,
                                            consumer_index=consumers.index(me), num_consumers=len(consumers)))


class FeedEndHook(tf.compat.v1.train.SessionRunHook):
    """Every rank meets at a barrier when training ends, so the feeding rank keeps serving the
    input until the ranks it feeds have read their last batch."""

    def begin(self):
        self._barrier = cluster.barrier_op(self._timeout())

    def is_idle(self) -> bool:
        return True  # nothing to do around runs: training keeps its fast path

    def end(self, session):
        cluster.run_barrier(session, self._barrier, timeout=self._timeout())

    @staticmethod
    def _timeout() -> float:
        # Ranks may finish apart by the chief's final checkpoint: allow the collective timeout too.
        return max(settings.startup_timeout(), settings.collective_timeout())


def contribute(options, mode, plan, layout) -> None:
    """Check the options against this host's ranks when a plan is built (errors before training);
    training plans of a fed run get the FeedEndHook."""
    resolved = resolve(options.get("local_rank_id"), options.get("local_device_list"))
    if resolved is not None and mode == "train" and ranks.get_rank_size() > 1:
        plan.hooks.append(FeedEndHook())
