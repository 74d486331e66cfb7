"""Data-parallel gradients: NPUDistributedOptimizer, npu_distributed_optimizer_wrapper, overflow flags.

Rules (the Ascend adapter's, on `collectives`):
- Gradients are averaged over the ranks: dense gradients are summed by all-reduce and divided by
  the rank size; `tf.IndexedSlices` (embedding lookups) are all-gathered (values and indices),
  values divided by the rank size. With one rank nothing changes.
- `hcom_parallel` (NPURunConfig, read from `settings` when the graph is built): False (default):
  every dense gradient of one dtype is flattened into ONE buffer and reduced by one all-reduce
  after the backward pass, then split back. True: one all-reduce per gradient, each depending only
  on its own gradient, so TensorFlow can start it while the backward pass is still running.
- The overflow flag of loss scaling (`is_finite`, computed on each rank's own gradients) is
  combined over the ranks (finite only if finite everywhere), so every rank skips the same steps.
  Without tailing optimization the flag has its own all-reduce after the gradients'; with
  `is_tailing_optimization` it travels inside the last gradient all-reduce (one collective fewer,
  the check overlapping the last reduction), as the adapter's tailing optimization does.
- `NPUDistributedOptimizer(..., is_weight_update_sharding=True)` is accepted and warns: sharding
  the update is a speed optimisation of the NPU; every rank updates every variable here, with the
  same result.

Integration with loss scaling (`npurun.precision`): `reduce_gradients_and_overflow(optimizer,
grads_and_vars, is_finite)` is what `NPUOptimizer` / `NPULossScaleOptimizer(is_distributed=True)`
call from their `reduce_gradients_and_overflow` extension method. As in the adapter, NPUOptimizer
averages the gradients and combines the flag; NPULossScaleOptimizer combines only the flag (its
gradients are averaged by an inner NPUDistributedOptimizer).
"""
from __future__ import annotations

import warnings
from typing import Optional

import tensorflow as tf

from . import ranks, settings, stop_flag
from .collectives import allgather, allreduce

_v1 = tf.compat.v1
# NPUOptimizer records its is_tailing_optimization here when it builds its update (an int per optimizer).
TAILING_COLLECTION = "npurun_is_tailing_optimization"
GRADIENT_SCOPE = "npurun_allreduce"


def npu_allreduce(tensor, average=True):
    """The adapter's `allreduce(tensor, average=True)` for one dense tensor or IndexedSlices."""
    size = ranks.get_rank_size()
    if size == 1:
        return tensor
    if isinstance(tensor, tf.IndexedSlices):
        values = allgather(tensor.values, size)
        indices = allgather(tensor.indices, size)
        if average:
            values = values / tf.cast(size, values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    summed = allreduce(tensor, "sum", fusion=0)
    return summed / tf.cast(size, summed.dtype) if average else summed


def _overflow_count(is_finite, dtype):
    # 1 where this rank overflowed: summed over ranks, > 0 means some rank overflowed.
    return tf.reshape(tf.cast(tf.logical_not(is_finite), dtype), [1])


def allreduce_overflow(is_finite):
    """`is_finite` (a bool scalar) ANDed over the ranks: True only if every rank's gradients were finite."""
    if ranks.get_rank_size() == 1:
        return is_finite
    total = allreduce(_overflow_count(is_finite, tf.float32), "sum", fusion=0)
    return tf.equal(tf.reduce_sum(total), 0.0, name="all_ranks_finite")


def average_gradients(grads_and_vars, hcom_parallel: Optional[bool] = None, is_finite=None):
    """Average gradients over the ranks; returns `(grads_and_vars, is_finite ANDed over ranks or None)`.

    `is_finite` given: the flag rides in the last gradient all-reduce (tailing optimization).
    `hcom_parallel` None: the current setting (NPURunConfig's hcom_parallel).
    """
    grads_and_vars = list(grads_and_vars)
    size = ranks.get_rank_size()
    if size == 1:
        return grads_and_vars, is_finite
    parallel = settings.current().hcom_parallel if hcom_parallel is None else hcom_parallel
    with tf.name_scope(GRADIENT_SCOPE):
        out = list(grads_and_vars)
        dense = [i for i, (g, _) in enumerate(grads_and_vars) if g is not None and not isinstance(g, tf.IndexedSlices)]
        for i, (grad, var) in enumerate(grads_and_vars):
            if isinstance(grad, tf.IndexedSlices):
                out[i] = (npu_allreduce(grad), var)
        if parallel:
            reduced, finite = _per_gradient(grads_and_vars, dense, size, is_finite)
        else:
            reduced, finite = _grouped(grads_and_vars, dense, size, is_finite)
        for i, grad in reduced.items():
            out[i] = (grad, grads_and_vars[i][1])
        if is_finite is not None and finite is None:  # no dense float gradient to ride on
            finite = allreduce_overflow(is_finite)
    return out, finite


def _per_gradient(grads_and_vars, dense, size, is_finite):
    reduced, finite = {}, None
    floats = [i for i in dense if grads_and_vars[i][0].dtype.is_floating]
    carrier = floats[-1] if (is_finite is not None and floats) else None
    stop = stop_flag.rider(grads_and_vars[floats[-1]][0].dtype) if floats else None
    for i in dense:
        grad = grads_and_vars[i][0]
        if i == carrier or (stop is not None and i == floats[-1]):
            pieces = [tf.reshape(grad, [-1])]
            if i == carrier:
                pieces.append(_overflow_count(is_finite, grad.dtype))
            if stop is not None:
                pieces.append(stop)
            summed = allreduce(tf.concat(pieces, axis=0), "sum", fusion=0)
            if stop is not None:
                stop_flag.record_ride(summed[-2:])
                summed = summed[:-2]
            if i == carrier:
                finite = tf.equal(summed[-1], 0, name="all_ranks_finite")
                summed = summed[:-1]
            reduced[i] = tf.reshape(summed, tf.shape(grad)) / tf.cast(size, grad.dtype)
        else:
            reduced[i] = allreduce(grad, "sum", fusion=0) / tf.cast(size, grad.dtype)
    return reduced, finite


def _grouped(grads_and_vars, dense, size, is_finite):
    """One all-reduce per dtype over the concatenation of that dtype's flattened gradients."""
    reduced, finite = {}, None
    by_dtype: dict = {}
    for i in dense:
        by_dtype.setdefault(grads_and_vars[i][0].dtype, []).append(i)
    carrier = None
    floating = [d for d in by_dtype if d.is_floating]
    if is_finite is not None:
        carrier = floating[0] if floating else None
    stop = stop_flag.rider(floating[0]) if floating else None  # the stop flag rides along (stop_flag.py)
    for dtype, members in by_dtype.items():
        grads = [grads_and_vars[i][0] for i in members]
        pieces = [tf.reshape(g, [-1]) for g in grads]
        if dtype == carrier:
            pieces.append(_overflow_count(is_finite, dtype))
        riding = stop is not None and dtype == floating[0]
        if riding:
            pieces.append(stop)
        summed = allreduce(tf.concat(pieces, axis=0), "sum", fusion=2, fusion_id=0)
        if riding:
            stop_flag.record_ride(summed[-2:])
            summed = summed[:-2]
        if dtype == carrier:
            finite = tf.equal(summed[-1], 0, name="all_ranks_finite")
            summed = summed[:-1]
        sizes = [tf.size(g) for g in grads]
        for i, grad, part in zip(members, grads, tf.split(summed, sizes, num=len(grads))):
            reduced[i] = tf.reshape(part, tf.shape(grad)) / tf.cast(size, dtype)
    return reduced, finite


def _contains_distributed(optimizer) -> bool:
    """Whether `optimizer` is or wraps an NPUDistributedOptimizer (which averages gradients itself)."""
    seen = 0
    while optimizer is not None and seen < 10:
        if isinstance(optimizer, NPUDistributedOptimizer) or getattr(optimizer, "_npurun_allreduce", False):
            return True
        optimizer = getattr(optimizer, "_opt", None) or getattr(optimizer, "_optimizer", None)
        seen += 1
    return False


def reduce_gradients_and_overflow(optimizer, grads_and_vars, is_finite):
    """The distributed implementation of the loss-scale optimizers' extension method.

    Returns `(grads_and_vars, is_finite)`: gradients averaged over the ranks when `optimizer` is an
    NPUOptimizer whose inner optimizer does not already average them, and `is_finite` (a bool
    scalar, or None when overflow checking is off) ANDed over the ranks; with the optimizer's
    `is_tailing_optimization` the flag travels in the last gradient all-reduce.
    """
    grads_and_vars = list(grads_and_vars)
    if ranks.get_rank_size() == 1:
        return grads_and_vars, is_finite
    # NPUOptimizer (npurun.precision, which sits above this module) says so with a class attribute.
    averages = bool(getattr(optimizer, "averages_gradients_over_ranks", False)) and \
        not _contains_distributed(getattr(optimizer, "_opt", None))
    tailing = bool(getattr(optimizer, "is_tailing_optimization", False))
    if averages:
        reduced, finite = average_gradients(grads_and_vars, is_finite=is_finite if tailing else None)
        if is_finite is not None and not tailing:
            # The adapter checks the overflow status after the gradient all-reduces.
            dense = [g for g, _ in reduced if g is not None and not isinstance(g, tf.IndexedSlices)]
            with tf.control_dependencies(dense):
                finite = allreduce_overflow(is_finite)
        return reduced, finite
    return grads_and_vars, (allreduce_overflow(is_finite) if is_finite is not None else None)


def check_tailing_optimization(graph, config_value: bool) -> None:
    """ValueError if an NPUOptimizer in `graph` was built with another is_tailing_optimization."""
    differing = sorted({bool(value) for value in graph.get_collection(TAILING_COLLECTION) if bool(value) != config_value})
    if differing:
        raise ValueError(f"NPURunConfig(is_tailing_optimization={config_value}) differs from "
                         f"NPUOptimizer(is_tailing_optimization={differing[0]}); the two must be equal")



class DelegatingOptimizer(_v1.train.Optimizer):
    """A tf.compat.v1 optimizer that changes the gradients of a wrapped one (`compute_gradients`, which
    subclasses define) and leaves the rest to it: applying them, its slots and its variables, so a
    checkpoint holds the wrapped optimizer's slots under their usual names."""

    def __init__(self, optimizer, name):
        super().__init__(use_locking=False, name=name)
        self._optimizer = optimizer

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


class NPUDistributedOptimizer(DelegatingOptimizer):
    """Wraps a tf.compat.v1 optimizer: gradients are averaged over the ranks before they are applied.

    `NPUDistributedOptimizer(optimizer, is_weight_update_sharding=False, name=None)`, as in the
    adapter. With one rank it is the wrapped optimizer.
    """

    def __init__(self, optimizer, is_weight_update_sharding=False, name=None):
        if not isinstance(optimizer, _v1.train.Optimizer):
            raise TypeError(f"NPUDistributedOptimizer: optimizer must be a tf.compat.v1.train.Optimizer, got "
                            f"{type(optimizer).__name__} (use npu_distributed_optimizer_wrapper for Keras optimizers)")
        if is_weight_update_sharding:
            warnings.warn("NPUDistributedOptimizer: is_weight_update_sharding=True has no effect here: every rank "
                          "applies every averaged gradient (the same result as sharding the update)", UserWarning,
                          stacklevel=2)
        super().__init__(optimizer, name or f"Distributed{type(optimizer).__name__}")
        self._is_weight_update_sharding = bool(is_weight_update_sharding)

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients, averaged over the ranks (see the module rules)."""
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        return average_gradients(grads_and_vars)[0]


def npu_distributed_optimizer_wrapper(optimizer):
    """Add gradient averaging to `optimizer` in place and return it (the adapter's wrapper).

    A tf.compat.v1 optimizer gets its `compute_gradients` wrapped; an optimizer with only
    `apply_gradients` (Keras) gets that wrapped, averaging the gradients it is given.
    """
    if isinstance(optimizer, str) or optimizer is None:
        raise TypeError(f"npu_distributed_optimizer_wrapper: pass an optimizer object; got {optimizer!r}")
    if getattr(optimizer, "_npurun_allreduce", False):
        return optimizer  # already wrapped: averaging twice would divide by the rank size twice
    if hasattr(optimizer, "compute_gradients"):
        original = optimizer.compute_gradients

        def compute_gradients(*args, **kwargs):
            return average_gradients(original(*args, **kwargs))[0]

        optimizer.compute_gradients = compute_gradients
    elif hasattr(optimizer, "apply_gradients"):
        original_apply = optimizer.apply_gradients

        def apply_gradients(grads_and_vars, *args, **kwargs):
            return original_apply(average_gradients(grads_and_vars)[0], *args, **kwargs)

        optimizer.apply_gradients = apply_gradients
    else:
        raise TypeError(f"npu_distributed_optimizer_wrapper: {type(optimizer).__name__} has neither "
                        f"compute_gradients nor apply_gradients")
    optimizer._npurun_allreduce = True
    return optimizer


def collective_count(graph=None) -> int:
    """How many collective ops `graph` holds (for checks and the benchmark)."""
    graph = graph or _v1.get_default_graph()
    return sum(1 for op in graph.get_operations() if op.type.startswith("Collective"))
