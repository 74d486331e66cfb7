"""sess.run-mode helpers of the Ascend adapter: loop sinking and sessions from an NpuOptimizer ConfigProto.

Ascend scripts that drive `sess.run` themselves do

    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["iterations_per_loop"].i = 10
    sess = npurun.util.session(config)                       # here: instead of tf.Session(config=config)
    train_op = npurun.util.set_iteration_per_loop(sess, train_op, 10)
    sess.run(train_op)                                        # 10 training steps

or, to change the number of iterations while running,

    iteration = npurun.util.IterationPerLoop()
    train_op = iteration.create_iteration_per_loop_var(train_op)   # before the graph is finalised
    iteration.load_iteration_per_loop_var(sess, 10)

The loop copies the ops train_op needs into a tf.while_loop (see npurun.estimator.repeat), so
each `sess.run` of the returned op runs N full steps, input included.

Other tensors fetched in the same `sess.run` as the loop op (`sess.run([loop, loss])`) get what
Ascend gives: a run reads exactly N input elements, a fetch computed from the input (the loss) is
the last iteration's value, and one that only reads variables (the global step) is read after
the loop. The session given to set_iteration_per_loop / load_iteration_per_loop_var rewrites such
fetches (one variant of the loop per distinct set of fetches, built on first use).
"""
from __future__ import annotations

import contextlib
import weakref

import tensorflow as tf

from .estimator.hooks import HookRunner
from .estimator.repeat import repeat, repeat_with_fetches

_v1 = tf.compat.v1
ITERATIONS_VARIABLE = "npurun_iterations_per_loop"


def _check_iterations(iterations_per_loop) -> int:
    if isinstance(iterations_per_loop, bool) or not isinstance(iterations_per_loop, int):
        raise TypeError(f"iterations_per_loop: got {iterations_per_loop!r}; allowed: an int >= 1")
    if iterations_per_loop < 1:
        raise ValueError(f"iterations_per_loop: got {iterations_per_loop}; allowed: an int >= 1")
    return iterations_per_loop


def _check_session_agrees(sess, iterations_per_loop: int) -> None:
    config = getattr(sess, "npurun_config", None)
    if config is not None and config.iterations_per_loop not in (1, iterations_per_loop):
        raise ValueError(f"iterations_per_loop: the session's NpuOptimizer entry says "
                         f"{config.iterations_per_loop}, set_iteration_per_loop was given {iterations_per_loop}; "
                         f"they must be equal")


def set_iteration_per_loop(sess, train_op, iterations_per_loop: int = 1):
    """Return an op that runs `train_op` `iterations_per_loop` times per `sess.run`.

    Rules: iterations_per_loop is an int >= 1 (1 returns train_op's group unchanged in effect);
    the graph must not be finalised; when `sess` came from `npurun.util.session`, its
    NpuOptimizer `iterations_per_loop` (if set) must be the same number.
    """
    iterations = _check_iterations(iterations_per_loop)
    _check_session_agrees(sess, iterations)
    if sess is not None and sess.graph is not train_op.graph:
        raise ValueError("set_iteration_per_loop: train_op is not in the session's graph")
    if iterations == 1:
        with train_op.graph.as_default():
            return tf.group(train_op, name="IterationOp")
    loop = repeat(train_op, iterations)
    _register_loop(loop, train_op, iterations, sess)
    return loop


# ---- fetches next to a loop op -----------------------------------------------------------------------
_LOOPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # graph -> {loop op: _Loop}


class _Loop:
    """A loop op made by set_iteration_per_loop, and its variants for other fetches next to it."""

    def __init__(self, train_op, iterations):
        self.train_op, self.iterations = train_op, iterations
        self.variants: dict = {}  # tuple of fetch names -> (loop op, [value per fetch])

    def variant(self, fetches: list):
        key = tuple(f.name for f in fetches)
        if key not in self.variants:
            iterations = self.iterations  # an int, or IterationPerLoop's variable (read in the new loop)
            with self.train_op.graph.as_default():
                count = iterations.read_value() if hasattr(iterations, "read_value") else iterations
            self.variants[key] = repeat_with_fetches(self.train_op, count, fetches)
        return self.variants[key]


def _register_loop(loop, train_op, iterations, sess) -> None:
    _LOOPS.setdefault(loop.graph, {})[loop] = _Loop(train_op, iterations)
    if sess is not None and not getattr(sess, "_npurun_loop_fetches", False):
        run = sess.run

        def run_with_loops(fetches, feed_dict=None, options=None, run_metadata=None):
            return run(_fetches_for_loops(sess.graph, fetches), feed_dict=feed_dict, options=options,
                       run_metadata=run_metadata)

        run_with_loops.__doc__ = run.__doc__
        sess.run = run_with_loops
        sess._npurun_loop_fetches = True


def _elements(fetches, graph, found: list):
    """Collect the tensors and ops of a fetch structure (lists, tuples, dicts, single elements)."""
    if isinstance(fetches, dict):
        for value in fetches.values():
            _elements(value, graph, found)
    elif isinstance(fetches, (list, tuple)):
        for value in fetches:
            _elements(value, graph, found)
    else:
        try:
            element = graph.as_graph_element(fetches, allow_tensor=True, allow_operation=True)
        except (TypeError, ValueError, KeyError):
            return
        if element not in found:
            found.append(element)


def _replace(fetches, graph, mapping: dict):
    if isinstance(fetches, dict):
        return type(fetches)((k, _replace(v, graph, mapping)) for k, v in fetches.items())
    if isinstance(fetches, (list, tuple)):
        values = [_replace(v, graph, mapping) for v in fetches]
        return type(fetches)(*values) if hasattr(fetches, "_fields") else type(fetches)(values)
    try:
        element = graph.as_graph_element(fetches, allow_tensor=True, allow_operation=True)
    except (TypeError, ValueError, KeyError):
        return fetches
    return mapping.get(element, fetches)


def _fetches_for_loops(graph, fetches):
    """`fetches` with a loop op and the other elements next to it replaced by a loop variant's values."""
    loops = _LOOPS.get(graph)
    if not loops:
        return fetches
    found: list = []
    _elements(fetches, graph, found)
    present = [e for e in found if e in loops]
    others = [e for e in found if e not in loops]
    if len(present) != 1 or not others:
        return fetches
    loop = present[0]
    variant, values = loops[loop].variant(others)
    mapping = dict(zip(others, values))
    mapping[loop] = variant
    return _replace(fetches, graph, mapping)


class IterationPerLoop:
    """The loop count as a variable, so it can change between runs without rebuilding the graph."""

    def __init__(self):
        self._variable = None

    def create_iteration_per_loop_var(self, train_op):
        """Return the looped train_op; its iteration count is loaded with `load_iteration_per_loop_var`
        (1 until then). Call before the graph is finalised."""
        with train_op.graph.as_default():
            self._variable = _v1.get_variable(ITERATIONS_VARIABLE, [], tf.int64, initializer=_v1.ones_initializer(),
                                              trainable=False, collections=[_v1.GraphKeys.LOCAL_VARIABLES],
                                              use_resource=True)
            self._loop = repeat(train_op, self._variable.read_value())
            self._train_op = train_op
            _register_loop(self._loop, train_op, self._variable, None)
            return self._loop

    def load_iteration_per_loop_var(self, sess, iterations_per_loop: int) -> None:
        """Set the iteration count used by the next runs (initialising the count if needed)."""
        if self._variable is None:
            raise ValueError("IterationPerLoop: call create_iteration_per_loop_var(train_op) first")
        iterations = _check_iterations(iterations_per_loop)
        _check_session_agrees(sess, iterations)
        with sess.graph.as_default():  # Variable.load builds its assignment in the default graph
            self._variable.load(iterations, sess)
        _register_loop(self._loop, self._train_op, self._variable, sess)  # sess now rewrites fetches next to it


class NPUSession(_v1.Session):
    """A tf.compat.v1.Session created from NPURunConfig options (see `session`).

    The options' plan is applied when the session is created: its ConfigProto, its environment
    (for the session's lifetime), its graph transforms (on the graph as built so far) and its
    hooks (around every `run`). `npurun_config` is the NPURunConfig the options came from.
    """

    def __init__(self, npurun_config, target: str = "", graph=None, mode: str = "train"):
        from .runtime.contributors import build_plan

        self.npurun_config = npurun_config
        self.plan = build_plan(npurun_config.options, mode)
        self._environment = contextlib.ExitStack()
        self._environment.enter_context(self.plan.environment())
        graph = graph or _v1.get_default_graph()
        for transform in self.plan.graph_transforms:
            transform(graph, mode)
        self._hooks = HookRunner(self.plan.hooks)
        with graph.as_default():
            self._hooks.begin()
        super().__init__(target or npurun_config.master, graph=graph, config=self.plan.config_proto)
        self._hooks.after_create_session(self)

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        for feed_check in self.plan.feed_checks:
            feed_check.check(self.graph, feed_dict)
        if not self._hooks:
            return super().run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)
        raw = _v1.Session.run.__get__(self)
        runner = _PassThrough(raw, feed_dict, run_metadata)
        results, _ = self._hooks.run(runner, fetches, options)
        return results

    def close(self):
        try:
            if self._hooks.all_hooks and not self._closed:
                self._hooks.end(self)
        finally:
            super().close()
            self._environment.close()

    def __del__(self):
        # A start that failed (a bad option, a refused device id) raised before TensorFlow's session
        # existed: there is nothing to close but the environment, if it was entered.
        if "_session" not in self.__dict__:
            environment = self.__dict__.get("_environment")
            if environment is not None:
                environment.close()
            return
        super().__del__()


class _PassThrough:
    """Lets HookRunner call the base Session.run with the caller's feeds and run_metadata."""

    def __init__(self, run, feed_dict, run_metadata):
        self._run, self._feed, self._metadata = run, feed_dict, run_metadata
        self.graph = run.__self__.graph  # the session's graph: hooks' fetches by name are read in it

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        merged = dict(self._feed or {})
        merged.update(feed_dict or {})
        results = self._run(fetches, feed_dict=merged or None, options=options, run_metadata=run_metadata)
        if self._metadata is not None and run_metadata is not None:
            self._metadata.CopyFrom(run_metadata)  # the caller's RunMetadata gets what the hooks saw
        return results


def session(config_proto=None, target: str = "", graph=None, mode: str = "train", **options) -> NPUSession:
    """A session for a hand-written ConfigProto whose NpuOptimizer entry carries NPU options.

    The entry is decoded (npurun.config.param_map) and validated as NPURunConfig options;
    `options` given as keywords win over it, and the entry is removed before TensorFlow sees the
    ConfigProto. Errors name the option, the value and what is allowed, as NPURunConfig's do.
    """
    from .config import NPURunConfig

    return NPUSession(NPURunConfig(session_config=config_proto, **options), target=target, graph=graph, mode=mode)

