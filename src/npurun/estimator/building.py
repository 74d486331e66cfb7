"""Building one mode's graph and session, honouring the session plan.

Every mode (train, eval, predict, export) goes through `ModeGraph`: a fresh tf.Graph with the
config's random seed, the global step, the input (on the host CPU), model_fn's ops under
`plan.device`, then `plan.graph_transforms`. The session is created with `plan.config_proto`
on `plan.target` (this process's server in a distributed run, else in-process); callers keep
`plan.environment()` open around all of it.
"""
from __future__ import annotations

import contextlib
import glob
import itertools
import logging
import os
from typing import Any, Callable, Optional

import tensorflow as tf

from .. import safe_files
from . import checkpoints, keras_names, scaffolds, tf_conformance
from .inputs import call_with_accepted, fn_args
from .spec import EstimatorSpec, ModeKeys

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1
MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")


_writer_ids = itertools.count()


def _event_suffix() -> str:
    return f".{os.getpid()}.{next(_writer_ids):06d}{safe_files.unguessable_suffix()}"


def summary_writer(directory: str, graph=None):
    """A FileWriter whose event file name is unique to this process and call.

    TensorFlow names event files by the second and the host only and truncates an existing file
    of the same name, so two writers opened within one second (two quick train() calls) would
    lose the first one's events; the suffix (pid, then a zero-padded counter so names sort in
    creation order) prevents that. TensorFlow opens the file with fopen, following a link planted
    under its name: the suffix ends with random digits (`_event_suffix`), so no name is guessable.
    """
    suffix = _event_suffix()
    with (graph or tf.Graph()).as_default():  # FileWriter refuses to start in eager mode
        try:
            return _v1.summary.FileWriter(directory, graph=graph, filename_suffix=suffix)
        except RuntimeError as error:  # TensorFlow's EventsWriter: "<file>; No space left on device"
            if checkpoints.is_disk_full(error):
                raise checkpoints.DiskFullError(
                    f"Not enough space to start the event file in {directory} "
                    f"({checkpoints.first_line(error)}). Free space there or use another model_dir") from None
            raise


# Evaluation directory -> (writer, its event-file suffix): one event file per directory and process.
_eval_writers: dict = {}


def write_eval_summary(directory: str, summary, step: int) -> None:
    """Add an evaluation's summary to this process's event file of `directory`.

    tf.estimator keeps one writer per directory (FileWriterCache), so every evaluation of a process
    (evaluate() calls, InMemoryEvaluatorHook runs) lands in one event file; tools that read only the
    newest event file of an eval directory see them all. A file removed meanwhile starts a new one.
    """
    key = os.path.realpath(directory)
    cached = _eval_writers.get(key)
    if cached is None or not glob.glob(os.path.join(glob.escape(key), "*" + cached[1])):
        if cached is not None:
            cached[0].close()
        suffix = _event_suffix()
        with tf.Graph().as_default():  # FileWriter refuses to start in eager mode
            cached = _eval_writers[key] = (_v1.summary.FileWriter(directory, filename_suffix=suffix), suffix)
    cached[0].add_summary(summary, step)
    cached[0].flush()


class ModelFnError(ValueError, TypeError):
    """model_fn is missing or returned something else than an EstimatorSpec.

    tf.estimator raises ValueError here; it is also a TypeError, which npurun raised before."""


def check_model_fn(model_fn: Callable, params=None) -> None:
    """model_fn may take any subset of (features, labels, mode, params, config), nothing else; when
    `params` are given it must take `params` (tf.estimator's rule: they would be lost otherwise)."""
    if model_fn is None:
        raise ModelFnError("model_fn must be provided to Estimator.")
    if not callable(model_fn):
        raise ModelFnError(f"model_fn must be callable; got {type(model_fn).__name__}")
    args = fn_args(model_fn)
    unknown = [name for name in args if name not in MODEL_FN_ARGS]
    if unknown:
        raise ValueError(f"model_fn ({getattr(model_fn, '__name__', model_fn)}) has following not expected args: "
                         f"{unknown}; allowed: {list(MODEL_FN_ARGS)} (any subset)")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({getattr(model_fn, '__name__', model_fn)}) does not include params argument, "
                         f"but params ({params!r}) is passed to Estimator. Add `params` to model_fn's arguments "
                         f"or do not pass params")


def device_scope(device: str):
    """tf.device(device) when the plan names one; otherwise let TensorFlow place ops."""
    return tf.device(device) if device else contextlib.nullcontext()


class ModeGraph:
    """A graph built for one mode; use inside `plan.environment()`.

    Attributes: graph, plan, mode, global_step, spec (the model_fn's EstimatorSpec).
    """

    def __init__(self, estimator, mode: str, plan, make_features: Callable[[], tuple],
                 build_model: Optional[Callable] = None):
        """`make_features()` runs in the graph (on the CPU) and returns (features, labels);
        `build_model(features, labels)` (default: call model_fn) returns an EstimatorSpec."""
        self.plan = plan
        self.mode = mode
        self.graph = tf.Graph()
        seed = estimator.config.tf_random_seed
        with self.graph.as_default():
            if seed is not None:
                _v1.set_random_seed(seed)
            self.global_step = _v1.train.get_or_create_global_step()
            # The input pipeline runs on the host whatever the model's device is.
            with tf.device("/device:CPU:0"):
                features, labels = make_features()
            with tf_conformance.device_fn_scope(estimator.config), device_scope(plan.device):
                if build_model is None:
                    self.spec = estimator.call_model_fn(features, labels, mode)
                else:
                    self.spec = build_model(features, labels)
            for transform in plan.graph_transforms:
                transform(self.graph, mode)

    @contextlib.contextmanager
    def session(self, master: str = ""):
        """A session on this graph with the plan's ConfigProto, closed on exit. The graph stays the
        default inside, because Saver.save/restore refuse to run outside a graph context."""
        with self.graph.as_default(), _v1.Session(target=master, graph=self.graph,
                                                  config=self.plan.config_proto) as sess:
            try:
                yield sess
            finally:
                stop_queue_runners(sess)

    def run_options(self):
        """RunOptions for every run: the plan's per-run timeout, or None."""
        if not self.plan.run_timeout_ms:
            return None
        return _v1.RunOptions(timeout_in_ms=self.plan.run_timeout_ms)

    def saver(self, **kwargs):
        saver = scaffolds.saver_of(self.spec.scaffold)
        if saver is not None:
            return saver
        # Retention is done by checkpoints.CheckpointWriter, so the Saver itself deletes nothing.
        return _v1.train.Saver(sharded=False, max_to_keep=None, allow_empty=True, **kwargs)


def call_model_fn(model_fn, features, labels, mode, params, config) -> EstimatorSpec:
    """Call model_fn with the arguments it names; check what it returns."""
    names = fn_args(model_fn)
    if labels is not None and "labels" not in names and mode != ModeKeys.PREDICT:
        raise ValueError("model_fn does not take labels, but input_fn returns labels (model_fn has no `labels` "
                         "argument)")
    available = {"features": features, "labels": labels, "mode": mode, "params": params, "config": config}
    with keras_names.per_graph():  # `Dense` is `dense` in every mode's graph, as the checkpoint has it
        spec = call_with_accepted(model_fn, available, "model_fn")
    if not isinstance(spec, EstimatorSpec):
        raise ModelFnError(f"model_fn should return an EstimatorSpec (or NPUEstimatorSpec); got "
                           f"{type(spec).__name__}")
    if spec.mode is None:  # tf.estimator accepts a spec without a mode: it is the mode model_fn was called in
        spec = type(spec)(**{**spec._fields_to_copy(), "mode": mode})
    if spec.mode != mode:
        raise ValueError(f"model_fn returned a spec for mode {spec.mode!r} when called in mode {mode!r}")
    return spec


def warm_start(source) -> None:
    """Initialise variables from `source` (a checkpoint, directory or WarmStartSettings; see warm_start.py).
    Must run before the variables' initialisers are grouped."""
    from . import warm_start as warm_start_lib

    warm_start_lib.apply(source)


def init_op(graph):
    """One op initialising global and local variables, tables and the resources registered with
    `resources.register_resource` (shared and local), as tf.train.Scaffold's defaults together do."""
    from tensorflow.python.ops import resources

    with graph.as_default():
        return tf.group(_v1.global_variables_initializer(), _v1.local_variables_initializer(),
                        _v1.tables_initializer(), resources.initialize_resources(resources.shared_resources()),
                        resources.initialize_resources(resources.local_resources()), name="npurun_init")


def local_init_op(graph):
    """Local variables (e.g. metric accumulators), tables and local resources, for sessions that restore
    globals (shared resources are saved with them, as in tf.train.Scaffold)."""
    from tensorflow.python.ops import resources

    with graph.as_default():
        return tf.group(_v1.local_variables_initializer(), _v1.tables_initializer(),
                        resources.initialize_resources(resources.local_resources()), name="npurun_local_init")


def start(sess, graph_ops: Any, saver, model_dir: str, checkpoint_path: Optional[str] = None,
          quarantine: bool = False, resume_input: bool = False,
          wait_for_initialization: Optional[Callable] = None, scaffold=None) -> Optional[str]:
    """Initialise a new session: restore (the given or newest checkpoint) or initialise variables.

    `graph_ops` is (init_op, local_init_op, input_initializer or None); `saver` a Saver or a list
    of them (see checkpoints.restore). Returns the restored
    checkpoint prefix, or None when variables were freshly initialised. `quarantine`,
    `resume_input`: see checkpoints.restore_newest. `wait_for_initialization(sess)`, when given
    (a non-chief parameter-server worker, see SessionPlan), waits for another task to initialise
    or restore the global variables instead.
    """
    full_init, local_init, input_init = graph_ops
    if wait_for_initialization is not None:
        if input_init is not None:
            sess.run(input_init)
        wait_for_initialization(sess)
        sess.run(local_init)
        return None
    savers = list(saver) if isinstance(saver, (list, tuple)) else [saver]
    if input_init is not None:
        # Before restoring: a checkpointed input position (if saved) overrides the fresh one.
        sess.run(input_init)
    if checkpoint_path is not None:
        checkpoints.restore(savers, sess, checkpoint_path)
        restored = checkpoint_path
    else:
        restored = checkpoints.restore_newest(savers, sess, model_dir, quarantine, resume_input)
    if restored:
        tf_conformance.check_restored_shapes(sess.graph, restored)
    if scaffolds.has_init_steps(scaffold):
        scaffolds.initialize(sess, scaffold, bool(restored), full_init, local_init)
    else:
        sess.run(local_init if restored else full_init)
    _start_queue_runners(sess)
    return restored


_QUEUE_RUNNER_THREADS = {}  # id(session) -> (Coordinator, threads) of the queue runners start() started


def _start_queue_runners(sess) -> None:
    """Start the graph's queue runners (TF 1 input pipelines: `tf.compat.v1.train.shuffle_batch`, a
    `QueueRunner` added to the QUEUE_RUNNERS collection), as MonitoredSession did once the variables are
    ready; `stop_queue_runners` stops them when the session closes."""
    runners = sess.graph.get_collection(_v1.GraphKeys.QUEUE_RUNNERS)
    if not runners:
        return
    coordinator = _v1.train.Coordinator()
    threads = []
    for runner in runners:
        threads.extend(runner.create_threads(sess, coord=coordinator, daemon=True, start=True))
    _QUEUE_RUNNER_THREADS[id(sess)] = (coordinator, threads)


def stop_queue_runners(sess) -> None:
    """Stop (and join) the queue runners `start` started on this session, if any."""
    started = _QUEUE_RUNNER_THREADS.pop(id(sess), None)
    if started is None:
        return
    coordinator, threads = started
    coordinator.request_stop()
    try:
        coordinator.join(threads, stop_grace_period_secs=10, ignore_live_threads=True)
    except Exception as error:  # noqa: BLE001 - reported, not raised: the session's work is already done
        logger.warning("An input queue runner ended with an error: %s", error)
