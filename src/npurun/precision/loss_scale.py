"""Loss-scale managers: the current scale and how it changes after each step.

Rules (the Ascend adapter's, which follow TensorFlow 1.x contrib.mixed_precision):

- `FixedLossScaleManager(loss_scale, enable_overflow_check=True)`: the scale never changes;
  `loss_scale` < 1 is a ValueError. With `enable_overflow_check=False` the optimizer does not look
  for inf/NaN gradients and applies every step.
- `ExponentialUpdateLossScaleManager(init_loss_scale, incr_every_n_steps,
  decr_every_n_nan_or_inf=2, incr_ratio=2, decr_ratio=0.8)`:
  after `incr_every_n_steps` consecutive finite steps the scale is multiplied by `incr_ratio`,
  unless the product is not a finite float32 (the scale then stays: never past float32 max);
  after `decr_every_n_nan_or_inf` overflowing steps (not necessarily consecutive) it is multiplied
  by `decr_ratio`, but never below 1. An overflowing step resets the finite-step count; a change of
  the scale resets both counts.
- Every manager counts the steps skipped because of an overflow.

State lives in float32/int64 resource variables, created lazily in the graph that first asks
for them, outside any control flow (`init_scope`), so the update also works when the optimizer is
built inside a `tf.while_loop` body: nothing is kept on the Python side per step. The scale is the
variable `loss_scale` (in the name scope the manager was made in, as the adapter's managers name
it: scripts fetch `'loss_scale:0'` by name and get the current scale); the counters are
`loss_scale_manager/good_steps`, `.../bad_steps`, `.../skipped_steps` next to it. The variables are
global (checkpointed, initialised with the others), summarised (tags `loss_scale`,
`loss_scale_skipped_steps`: the scale variable's full name, so a second manager's are `loss_scale_1`,
`loss_scale_1_skipped_steps`, and a manager made in scope `rmsprop` has `rmsprop/loss_scale`, ...), and logged by `LossScaleLoggingHook` (logger "npurun").
"""
from __future__ import annotations

import logging
import numbers
import re
import weakref

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1
logger = logging.getLogger("npurun")

# Graph collections of each manager's scale and skipped-steps variables, in the same order (what
# the logging hook reads). Variables, unlike Python objects, serialise into a MetaGraphDef, so no
# export warns about these collections.
SCALES_COLLECTION = "npurun_loss_scales"
SKIPPED_COLLECTION = "npurun_loss_scale_skipped_steps"
FLOAT32_MAX = float(np.finfo(np.float32).max)
# The name scope a device loop's body adds (control flow v1): a manager made in model_fn is named as
# model_fn names it, inside a loop or not.
_LOOP_SCOPE = re.compile(r"^(.*/)?npurun_device_loop(_\d+)?(/|$)")


def _summary(tag, value, name):
    """A scalar summary tagged `tag` whose op is `name` (made unique by the graph), not `tag`: `loss_scale`
    names the variable."""
    from tensorflow.python.ops import gen_logging_ops

    summary = gen_logging_ops.scalar_summary(tags=tag, values=value, name=name)
    _v1.add_to_collection(_v1.GraphKeys.SUMMARIES, summary)


class _LossScaleState:
    """The variables of one manager in one graph."""

    def __init__(self, manager: "LossScaleManager", initial_scale: float):
        def variable(name, value, dtype):
            return _v1.Variable(value, name=name, dtype=dtype, trainable=False, use_resource=True,
                                collections=[_v1.GraphKeys.GLOBAL_VARIABLES])

        self.manager = manager
        self.scale = variable("loss_scale", initial_scale, tf.float32)
        with _v1.name_scope("loss_scale_manager"):
            self.good_steps = variable("good_steps", 0, tf.int64)
            self.bad_steps = variable("bad_steps", 0, tf.int64)
            self.skipped_steps = variable("skipped_steps", 0, tf.int64)
        # Tagged `loss_scale` whatever scope the manager was made in; a second manager in the graph
        # (White_Box_Cartoonization's generator and discriminator) gets `loss_scale_1`, not a second
        # `loss_scale` that merge_all's MergeSummary refuses as a duplicate.
        earlier = len(_v1.get_default_graph().get_collection(SCALES_COLLECTION))
        tag = "loss_scale" if earlier == 0 else f"loss_scale_{earlier}"
        _summary(tag, self.scale.read_value(), "loss_scale_summary")
        _summary(f"{tag}_skipped_steps", self.skipped_steps.read_value(), "loss_scale_skipped_steps_summary")


class LossScaleManager:
    """Base class: owns the state variables; subclasses say how the scale changes.

    `get_loss_scale()` returns a float32 scalar tensor (one read of the variable: use the same
    tensor to scale the loss and to unscale the gradients). `update_loss_scale(finite_grads)`
    returns the op that updates the scale and the counters for one step.
    """

    def __init__(self, initial_scale: float):
        self._initial_scale = float(initial_scale)
        self._states: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        # The adapter's managers create their `loss_scale` in the name scope they are made in
        # (`with tf.name_scope('rmsprop'):` -> 'rmsprop/loss_scale:0', as Hourglass fetches it).
        scope = "" if tf.executing_eagerly() else _v1.get_default_graph().get_name_scope()
        self._scope = _LOOP_SCOPE.sub("", scope)

    # ---- state --------------------------------------------------------------------------------------
    def _state(self) -> _LossScaleState:
        # The variables belong to the outermost graph, never to a while/cond body function.
        with _v1.init_scope():
            graph = _v1.get_default_graph()
            state = self._states.get(graph)
            if state is None:
                # the scope the manager was made in, whatever scope the caller is in now
                with graph.name_scope(self._scope + "/" if self._scope else None):
                    state = _LossScaleState(self, self._initial_scale)
                graph.add_to_collection(SCALES_COLLECTION, state.scale)
                graph.add_to_collection(SKIPPED_COLLECTION, state.skipped_steps)
                self._states[graph] = state
            return state

    @property
    def loss_scale_variable(self):
        """The float32 variable holding the current scale (created on first use in this graph)."""
        return self._state().scale

    @property
    def skipped_steps_variable(self):
        """The int64 variable counting the steps skipped because gradients held inf/NaN."""
        return self._state().skipped_steps

    def get_loss_scale(self) -> tf.Tensor:
        return tf.identity(self._state().scale.read_value(), name="current_loss_scale")

    def get_enable_overflow_check(self) -> bool:
        return True

    # ---- update -------------------------------------------------------------------------------------
    def update_loss_scale(self, finite_grads) -> tf.Operation:
        """The op updating the scale and the counters after one step; `finite_grads` is a bool scalar."""
        state = self._state()
        finite_grads = tf.convert_to_tensor(finite_grads, dtype=tf.bool)
        count = _v1.cond(finite_grads, tf.no_op,
                         lambda: state.skipped_steps.assign_add(1, read_value=False))
        return tf.group(count, self._update(state, finite_grads), name="update_loss_scale")

    def _update(self, state: _LossScaleState, finite_grads) -> tf.Operation:
        return tf.no_op()


class FixedLossScaleManager(LossScaleManager):
    """A constant loss scale (>= 1); overflowing steps are still skipped unless the check is off."""

    def __init__(self, loss_scale, enable_overflow_check: bool = True):
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, numbers.Real):
            raise TypeError(f"FixedLossScaleManager: loss_scale must be a number >= 1, got {loss_scale!r}")
        if not loss_scale >= 1:
            raise ValueError(f"FixedLossScaleManager: loss_scale must be >= 1, got {loss_scale!r}")
        if not isinstance(enable_overflow_check, bool):
            raise TypeError(f"FixedLossScaleManager: enable_overflow_check must be True or False, "
                            f"got {enable_overflow_check!r}")
        super().__init__(loss_scale)
        self._enable_overflow_check = enable_overflow_check

    def get_enable_overflow_check(self) -> bool:
        return self._enable_overflow_check


def _positive_int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{owner}: {name} must be an int >= 1, got {value!r}")
    return int(value)


def _real(owner, name, value, rule, ok):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a number {rule}, got {value!r}")
    if not ok(value):
        raise ValueError(f"{owner}: {name} must be a number {rule}, got {value!r}")
    return float(value)


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """Dynamic loss scale: grows after good steps, shrinks after overflows (see module rules)."""

    def __init__(self, init_loss_scale, incr_every_n_steps, decr_every_n_nan_or_inf=2, incr_ratio=2,
                 decr_ratio=0.8):
        owner = "ExponentialUpdateLossScaleManager"
        init_loss_scale = _real(owner, "init_loss_scale", init_loss_scale, "in [1, float32 max]",
                                lambda v: 1 <= v <= FLOAT32_MAX)
        self._incr_every_n_steps = _positive_int(owner, "incr_every_n_steps", incr_every_n_steps)
        self._decr_every_n_nan_or_inf = _positive_int(owner, "decr_every_n_nan_or_inf", decr_every_n_nan_or_inf)
        self._incr_ratio = _real(owner, "incr_ratio", incr_ratio, ">= 1", lambda v: v >= 1)
        self._decr_ratio = _real(owner, "decr_ratio", decr_ratio, "in (0, 1]", lambda v: 0 < v <= 1)
        super().__init__(init_loss_scale)

    def _update(self, state: _LossScaleState, finite_grads) -> tf.Operation:
        def reset_counts():
            return [state.good_steps.assign(0, read_value=False), state.bad_steps.assign(0, read_value=False)]

        def after_finite_step():
            good = state.good_steps.read_value() + 1

            def grow():
                grown = state.scale.read_value() * self._incr_ratio
                # Stay put rather than become inf: the scale never leaves the float32 range.
                new_scale = tf.where(tf.math.is_finite(grown), grown, state.scale.read_value())
                return tf.group(state.scale.assign(new_scale, read_value=False), *reset_counts())

            return _v1.cond(good >= self._incr_every_n_steps, grow,
                            lambda: tf.group(state.good_steps.assign(good, read_value=False)))

        def after_overflow():
            bad = state.bad_steps.read_value() + 1

            def shrink():
                new_scale = tf.maximum(1.0, state.scale.read_value() * self._decr_ratio)
                return tf.group(state.scale.assign(new_scale, read_value=False), *reset_counts())

            def count():
                return tf.group(state.bad_steps.assign(bad, read_value=False),
                                state.good_steps.assign(0, read_value=False))

            return _v1.cond(bad >= self._decr_every_n_nan_or_inf, shrink, count)

        return _v1.cond(finite_grads, after_finite_step, after_overflow)


class LossScaleLoggingHook(_v1.train.SessionRunHook):
    """Logs the loss scale of every manager in the graph (logger "npurun").

    Reads the scale and the skipped-step count with each run (two scalars); logs at INFO every
    `every_n_runs` runs and whenever steps were skipped since the last run. Does nothing when the
    graph has no loss-scale manager.
    """

    def __init__(self, every_n_runs: int | None = 100):
        self._every_n_runs = every_n_runs
        self._fetches = []
        self._runs = 0
        self._last_skipped = None

    def begin(self):
        graph = _v1.get_default_graph()
        self._fetches = [self._read_if_initialized(scale, skipped) for scale, skipped in
                         zip(graph.get_collection(SCALES_COLLECTION), graph.get_collection(SKIPPED_COLLECTION))]
        self._runs = 0
        self._last_skipped = None

    @staticmethod
    def _read_if_initialized(scale, skipped_steps):
        """(scale, skipped steps), or (NaN, -1) while the variables are not initialized: sess.run
        scripts run other things (the variable initializer, iterator initializers) before them."""
        with _v1.name_scope("loss_scale_logging"):
            ready = tf.logical_and(scale.is_initialized(), skipped_steps.is_initialized())
            return _v1.cond(ready, lambda: (scale.read_value(), skipped_steps.read_value()),
                            lambda: (tf.constant(float("nan")), tf.constant(-1, tf.int64)))

    def is_idle(self) -> bool:
        """Without a loss-scale manager in the graph this hook has nothing to do: the Estimator's
        hook runner then leaves it out of the per-step path."""
        return not self._fetches

    def before_run(self, run_context):
        return _v1.train.SessionRunArgs(self._fetches) if self._fetches else None

    def after_run(self, run_context, run_values):
        if not self._fetches:
            return
        values = run_values.results
        if any(int(k) < 0 for _, k in values):
            return  # before the variables were initialized: nothing to log, not counted
        self._runs += 1
        skipped = [int(k) for _, k in values]
        periodic = bool(self._every_n_runs) and self._runs % self._every_n_runs == 0
        newly = [] if self._last_skipped is None else [a - b for a, b in zip(skipped, self._last_skipped)]
        for index, (scale, count) in enumerate(values):
            if newly and newly[index] > 0:
                logger.info("loss scale: %d step(s) skipped (gradients held inf/NaN); scale now %g, "
                            "%d skipped in total", newly[index], scale, count)
            elif periodic:
                logger.info("loss scale %g, %d step(s) skipped so far", scale, count)
        self._last_skipped = skipped
