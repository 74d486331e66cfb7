"""The SessionRunHook protocol, and the schedules of the built-in periodic work.

`HookRunner` runs `tf.compat.v1.train.SessionRunHook`s exactly as MonitoredSession did: `begin`
before the graph is finalised, `after_create_session`, then around each run `before_run` (its
`SessionRunArgs` fetches, feeds and RunOptions merged across hooks), `after_run` with
`SessionRunValues(results, options, run_metadata)`, `run_context.request_stop()`, and `end`.

The built-in work (checkpoints, summaries, logging) is not done by hooks: a training loop asks
the schedules below, with plain integer comparisons, whether anything is due, so a step where
nothing is due costs no Python beyond the run itself.
"""
from __future__ import annotations

import math
import sys
import time
from typing import TYPE_CHECKING, Callable, Iterable, Optional

import tensorflow as tf

from ..distribute import watchdog
from .inner_fetches import HostSession, values_by_name

if TYPE_CHECKING:
    from .inner_fetches import InnerFetches

_v1 = tf.compat.v1
NEVER = math.inf


class HookRunner:
    """Runs a list of SessionRunHooks around `Session.run` calls.

    A hook may define `is_idle() -> bool`, asked once after `begin()`: an idle hook (for example
    one that found nothing to watch in the graph) still gets `after_create_session` and `end`,
    but is left out of the runs, so it does not slow every step down. The runner is false when
    no hook takes part in runs. `inner` (an inner_fetches.InnerFetches) translates fetches of
    tensors built inside a device loop or compiled step; without it, a hook's fetch by name of a
    resource variable ('global_step:0') gets the variable's value, as with TensorFlow 1.15's variables.
    """

    def __init__(self, hooks: Iterable, inner: Optional["InnerFetches"] = None):
        self.all_hooks = list(hooks)
        self.inner = inner
        self.hooks = list(self.all_hooks)  # those called around runs
        self.coordinator = _v1.train.Coordinator()
        self._callables = {}

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def begin(self) -> None:
        for hook in self.all_hooks:
            hook.begin()
        self.hooks = [h for h in self.all_hooks if not (hasattr(h, "is_idle") and h.is_idle())]

    def after_create_session(self, sess) -> None:
        for hook in self.all_hooks:
            hook.after_create_session(self._session_for(hook, sess), self.coordinator)

    def end(self, sess) -> None:
        for hook in self.all_hooks:
            hook.end(self._session_for(hook, sess))

    def _session_for(self, hook, sess):
        """With a device loop or compiled step, the session whose run gives model_fn's constant tensors
        (inner_fetches.HostSession); else `sess`."""
        if self.inner is None:
            return sess
        return HostSession(sess, self.inner, hook)

    def run(self, sess, fetches, base_options=None):
        """Run `fetches` with every hook's before_run/after_run; returns (results, stop_requested)."""
        context = _v1.train.SessionRunContext(original_args=_v1.train.SessionRunArgs(fetches), session=sess)
        requests, feed_dict = [], {}
        options = _v1.RunOptions()
        if base_options is not None:
            options.CopyFrom(base_options)
        for hook in self.hooks:
            args = hook.before_run(context)
            if args is None:
                requests.append(None)
                continue
            if args.fetches is None:
                requests.append(None)
            elif self.inner is not None:
                requests.append(self.inner.translate(hook, args.fetches))
            else:  # 'global_step:0' by name: the step (TensorFlow 1.15's ref variable), not the handle
                graph = getattr(sess, "graph", None)
                requests.append(args.fetches if graph is None else values_by_name(graph, args.fetches))
            for tensor, value in (args.feed_dict or {}).items():
                if tensor in feed_dict:
                    raise RuntimeError(f"Two hooks feed the same tensor {tensor!r}")
                feed_dict[tensor] = value
            if args.options is not None:
                merge_run_options(options, args.options)
        metadata = _v1.RunMetadata()
        asked = {i: request for i, request in enumerate(requests) if request is not None}
        structure = {"own": fetches, "hooks": asked}
        # A callable fixes its debug watches when it is made: a run with watches goes through sess.run.
        # busy: a peer rank that is gone while this run waits stops this rank (distribute/watchdog.py)
        with watchdog.busy():
            if feed_dict or options.debug_options.debug_tensor_watch_opts or not hasattr(sess, "make_callable"):
                results = sess.run(structure, feed_dict=feed_dict or None, options=options, run_metadata=metadata)
            else:
                results = self._cached_run(sess, fetches, requests, structure, options, metadata)
        for i, hook in enumerate(self.hooks):
            hook.after_run(context, _v1.train.SessionRunValues(results=results["hooks"].get(i), options=options,
                                                               run_metadata=metadata))
        return results["own"], context.stop_requested


    def _cached_run(self, sess, fetches, requests, structure, options, metadata):
        """sess.run through a cached callable when the fetch objects are those of an earlier run.

        Hooks usually return the same fetch objects every run, and the training loop reuses its
        fetch dicts, so this saves Session.run's per-call fetch parsing. Entries keep references
        to the objects they were built for: an id in the key cannot be reused by another object.
        """
        key = (id(sess), id(fetches)) + tuple(id(r) for r in requests)
        entry = self._callables.get(key)
        if entry is None:
            flat = tf.nest.flatten(structure)
            entry = (sess.make_callable(flat, accept_options=True), structure, (sess, fetches, requests))
            if len(self._callables) < _MAX_CALLABLES:
                self._callables[key] = entry
        run, layout, _ = entry
        if options.ByteSize():
            values = run(options=options, run_metadata=metadata)
        else:
            values = run()  # no tracing or timeout asked for: skip passing the protos
        return tf.nest.pack_sequence_as(layout, values)


_MAX_CALLABLES = 32


def merge_run_options(into, other) -> None:
    """Merge RunOptions as MonitoredSession did: the most tracing, the shortest timeout, any flag."""
    into.trace_level = max(into.trace_level, other.trace_level)
    if other.timeout_in_ms:
        into.timeout_in_ms = min(t for t in (into.timeout_in_ms, other.timeout_in_ms) if t)
    into.output_partition_graphs |= other.output_partition_graphs
    into.report_tensor_allocations_upon_oom |= other.report_tensor_allocations_upon_oom
    into.debug_options.debug_tensor_watch_opts.extend(other.debug_options.debug_tensor_watch_opts)


class StepSchedule:
    """Due at the first step at or after each multiple of `every` (None or 0: never due)."""

    def __init__(self, every: Optional[int], start_step: int):
        self.every = every or None
        self.due = NEVER
        self.reset(start_step)

    def reset(self, step: int) -> None:
        """The next due step is the first multiple after `step`."""
        if self.every is not None:
            self.due = (step // self.every + 1) * self.every


class TimeSchedule:
    """Due when `secs` of wall time (per `clock`) passed since the last reset (None: never)."""

    def __init__(self, secs: Optional[float], clock: Callable[[], float]):
        self.secs = secs or None
        self.clock = clock
        self.last = clock()

    def is_due(self) -> bool:
        return self.secs is not None and self.clock() - self.last >= self.secs

    def reset(self) -> None:
        self.last = self.clock()


class Progress:
    """A one-line progress display on stderr, only when stderr is a terminal."""

    def __init__(self, start: int, last: Optional[int]):
        self.enabled = sys.stderr.isatty()
        self.start, self.last = start, last
        self.every = max(1, (last - start) // 50) if last is not None else 100
        self.schedule = StepSchedule(self.every if self.enabled else None, start)

    def show(self, step: int, loss: float) -> None:
        total = f"/{self.last}" if self.last is not None else ""
        sys.stderr.write(f"\rstep {step}{total}  loss {loss:.4g}")
        sys.stderr.flush()
        self.schedule.reset(step)

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


class RateMeter:
    """global_step/sec between two calls."""

    def __init__(self, step: int):
        self.step, self.time = step, time.perf_counter()

    def rate(self, step: int) -> Optional[float]:
        now = time.perf_counter()
        elapsed, steps = now - self.time, step - self.step
        self.step, self.time = step, now
        return steps / elapsed if elapsed > 0 and steps > 0 else None
