"""NPUEstimator: tf.estimator's Estimator API on tf.compat.v1 graph-mode sessions."""
from __future__ import annotations

import copy

import logging
import os
import threading
import warnings
from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from ..config import NPURunConfig, rules
from ..debug.exception_dump import exception_dump
from ..distribute import errors as distribute_errors
from ..runtime.contributors import build_plan
from .. import preemption, safe_files
from . import building, checkpoints, export as export_lib, model_dir_lock, tf_conformance, training_graph
from .hooks import HookRunner
from .inputs import call_with_accepted, estimator_call, make_input
from .model_dir import resolve_model_dir
from .spec import LOSS_METRIC_KEY, ModeKeys, check_hooks

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1
_HOOKS_WORDING = "Hooks must be a SessionRunHook, given:"  # tf.estimator's words for train/evaluate hooks


def _check_shared_model_dir(model_dir) -> None:
    """Distributed training: a rank given the chief's model_dir path must see the chief's directory there (checked at
    the start-up barrier), and when the chief resumes every rank must share it (distribute/shared_dir.py)."""
    from ..distribute import cluster as distribute_cluster, settings as distribute_settings, shared_dir

    layout = distribute_cluster.read_layout()
    shared_dir.announce(str(model_dir), layout.rank_id, layout.rank_size)
    shared_dir.check(str(model_dir), layout.rank_id, layout.rank_size, distribute_settings.startup_timeout())


class NPUEstimator:
    """Trains, evaluates, predicts with and exports a model described by `model_fn`.

    Args:
      model_fn: builds the model; takes any subset of `(features, labels, mode, params, config)`
        (by those names) and returns an `EstimatorSpec` / `NPUEstimatorSpec` for `mode`.
      model_dir: where checkpoints, summaries and exports go. If `config.model_dir` is also set,
        the two must be equal (`ValueError` otherwise); if neither is set a new directory
        `model_dir_XXXXXXXXXX` is created in the current directory (named in a logged warning).
      config: an `NPURunConfig` (`ValueError` for anything else); None means `NPURunConfig()`.
      params: a dict passed to model_fn and input_fn (when they take `params`).
      job_start_file: accepted for Ascend compatibility (the Ascend job-description file); the
        cluster here comes from `TF_CONFIG` / `RANK_ID`, so a non-empty value only warns.
      warm_start_from: a checkpoint prefix or directory (or a WarmStartSettings-like object):
        trainable variables with the same name and shape start from its values, when model_dir
        has no checkpoint yet.

    Every session is built from `npurun.runtime.contributors.build_plan(config.options, mode)`: its
    ConfigProto, device, graph transforms, hooks and environment. Checkpoints and summaries are
    written only by the chief (`config.is_chief`).
    """

    def __init__(self, model_fn: Callable, model_dir: Optional[str] = None, config: Optional[NPURunConfig] = None,
                 params: Optional[dict] = None, job_start_file: str = "", warm_start_from=None):
        if config is None:
            config = NPURunConfig()
        if not isinstance(config, NPURunConfig):
            raise ValueError(f"NPUEstimator: config must be an instance of `RunConfig` (an npurun.NPURunConfig); "
                             f"got {type(config).__name__}")
        building.check_model_fn(model_fn, params)
        if job_start_file:
            warnings.warn("NPUEstimator: job_start_file has no effect here (the cluster comes from TF_CONFIG / "
                          "RANK_ID)", UserWarning, stacklevel=2)
        self._model_fn = model_fn
        self._config = config
        # Any object, as tf.estimator keeps it (a deep copy): ModelZoo passes `tf.contrib.training.HParams` (21 folders)
        self._params = copy.deepcopy(params) if params is not None else {}
        self._model_dir = resolve_model_dir(config.model_dir, model_dir or None)  # '' is "not given", as in tf
        self._config = tf_conformance.config_with_model_dir(config, self._model_dir)
        self._warm_start_from = warm_start_from
        self.last_plan = None  # the SessionPlan of the most recent session, for inspection

    # ---- properties --------------------------------------------------------------------------------
    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> NPURunConfig:
        return self._config

    @property
    def params(self):
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable:
        """model_fn bound to this estimator's params: `model_fn(features, labels, mode, config)`
        returning its EstimatorSpec (tf.estimator's fixed signature)."""
        def public_model_fn(features, labels, mode, config):
            return building.call_model_fn(self._model_fn, features, labels, mode, self._params, config)

        return public_model_fn

    # ---- helpers shared by the modes ----------------------------------------------------------------
    def call_model_fn(self, features, labels, mode):
        return building.call_model_fn(self._model_fn, features, labels, mode, self._params, self._config)

    def _plan(self, mode):
        self.last_plan = build_plan(self._config.options, mode)
        return self.last_plan

    def _input_maker(self, input_fn, mode, holder: dict, get_next: bool = True, transform=None):
        def make():
            available = {"mode": mode, "params": self._params, "config": self._config}
            with estimator_call():
                result = call_with_accepted(input_fn, available, "input_fn")
            holder["input"] = make_input(result, get_next, transform)
            return holder["input"].features, holder["input"].labels
        return make

    # ---- train ----------------------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Train until `steps` more steps, global step `max_steps`, the input ends, or a hook stops.

        Rules: `steps` and `max_steps` are exclusive and must be > 0 (a float counts as the next integer,
        as in tf.estimator: 5.0 is 5, 5.5 is 6; inf is no limit); `max_steps` is a total, so a
        model whose checkpoint is already at or past it is not trained. With `iterations_per_loop`
        N > 1 the number of steps of the call must be a multiple of N. Returns self.

        Faults: a second training job on the same model_dir gets ModelDirInUseError naming the
        holder; SIGTERM / SIGINT save a checkpoint after the run in flight and raise
        SystemExit(143 / 130); see docs/estimator.md, "What survives what".
        """
        if self._config.graph_run_mode == 0:
            raise ValueError("NPUEstimator.train: graph_run_mode=0 is inference mode; training needs "
                             "graph_run_mode=1 (NPURunConfig)")
        tf_conformance.check_not_evaluator(self._config)
        steps, max_steps = tf_conformance.check_steps(steps, max_steps)
        tf_conformance.check_listeners(saving_listeners, self._config, hooks)
        rules.check_ps_tasks_have_strategy(self._config.options, self._config.cluster)
        hooks = check_hooks(hooks, "NPUEstimator.train", _HOOKS_WORDING)
        if max_steps is not None:
            latest = checkpoints.latest_checkpoint(self._model_dir)
            if latest is not None and checkpoints.checkpoint_step(latest) is not None \
                    and checkpoints.checkpoint_step(latest) >= max_steps:
                logger.info("Skipping training: the checkpoint %s is already at or past max_steps=%d",
                            latest, max_steps)
                return self
        # One training job per model_dir (the chief writes it); SIGTERM / SIGINT stop after the run in
        # flight with a checkpoint, then exit 143 / 130 (see preemption.py).
        with model_dir_lock.hold(self._model_dir, enabled=self._config.is_chief), preemption.watch() as watch:
            _check_shared_model_dir(self._model_dir)
            try:
                training_graph.train(self, input_fn, list(hooks or ()), steps, max_steps,
                                     list(saving_listeners or ()))
            except distribute_errors.CollectiveTimeoutError as error:
                if not watch.peer_stopped_first(
                        error, lambda: checkpoints.latest_checkpoint(self._model_dir)):
                    raise
        watch.exit_if_requested()
        return self

    # ---- evaluate ---------------------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluate the model on `steps` batches (None: until the input ends).

        Returns a dict with each `eval_metric_ops` value, `loss` (the mean loss over the batches)
        and `global_step` (of the checkpoint evaluated). Summaries of the results go to
        `model_dir/eval` (or `model_dir/eval_<name>`), on the chief. Without a checkpoint the variables
        are freshly initialised (with a warning), as tf.estimator does.
        """
        steps, _ = tf_conformance.check_steps(steps, None)
        hooks = check_hooks(hooks, "NPUEstimator.evaluate", _HOOKS_WORDING)
        path = self._checkpoint_to_use(checkpoint_path)
        if path is None:  # as tf.estimator: evaluate freshly initialised variables, with a warning
            logger.warning("Could not find trained model in model_dir: %s, running initialization to evaluate.",
                           self._model_dir)
        plan = self._plan(ModeKeys.EVAL)
        holder = {}
        with plan.environment():
            built = building.ModeGraph(self, ModeKeys.EVAL, plan, self._input_maker(input_fn, ModeKeys.EVAL, holder))
            spec = built.spec
            with built.graph.as_default():
                metrics = dict(spec.eval_metric_ops)
                if "global_step" in metrics:
                    raise ValueError("Metric with name `global_step` is not allowed, because Estimator already "
                                     "defines a default metric with the same name (the evaluated checkpoint's "
                                     "step); rename the metric")
                if LOSS_METRIC_KEY not in metrics:
                    metrics[LOSS_METRIC_KEY] = _v1.metrics.mean(spec.loss)
                update = tf.group(*[pair[1] for pair in metrics.values()])
                values = {key: pair[0] for key, pair in metrics.items()}
                self._maybe_warm_start(path)
                runner, saver, ops = _prepare_restore(built, holder, hooks, spec.evaluation_hooks, plan)
            built.graph.finalize()
            with built.session(plan.target) as sess, distribute_errors.explained(self._config):
                # Without an explicit checkpoint_path: the newest that restores at this moment (the
                # one checked above may have been evicted meanwhile by a training job).
                restored = building.start(sess, ops, saver, self._model_dir,
                                          checkpoint_path=_explicit(checkpoint_path, path), scaffold=spec.scaffold)
                if path is not None and restored is None:
                    raise ValueError(f"NPUEstimator.evaluate: the checkpoints in {self._model_dir} vanished "
                                     f"before they could be read")
                runner.after_create_session(sess)
                with exception_dump(self._config.options, sess, feed_dict=None, mode=ModeKeys.EVAL):
                    done = _run_until_end(sess, runner, update, steps, built.run_options())
                    if done == 0:
                        raise ValueError("NPUEstimator.evaluate: the evaluation input is empty (input_fn's dataset "
                                         "ended before its first batch), so there is nothing to evaluate; check "
                                         "the input_fn for mode EVAL (files, filters, batch size with "
                                         "drop_remainder)")
                    results = sess.run(values)
                results["global_step"] = int(sess.run(built.global_step))
                runner.end(sess)
        # The chief writes evaluation summaries, and an evaluator task (its evaluations are the eval events).
        if self._config.is_chief or getattr(self._config, "task_type", None) == "evaluator":
            # An in-memory evaluation's checkpoint is a private temporary one: not worth naming (tf.estimator
            # writes no checkpoint_path for those either).
            _write_eval_summaries(self.eval_dir(name), results, None if _in_memory.active else restored)
        logger.info("Evaluation at step %d: %s", results["global_step"],
                    ", ".join(f"{k} = {v}" for k, v in sorted(results.items())))
        return results

    def eval_dir(self, name=None) -> str:
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # ---- predict ----------------------------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True):
        """Yield predictions for every input element, until the input ends.

        Yields one example at a time (a dict when `predictions` is a dict, restricted to
        `predict_keys` if given) or, with `yield_single_examples=False`, whole batches. Without a
        checkpoint the variables are freshly initialised (with a warning), as tf.estimator did.
        """
        hooks = check_hooks(hooks, "NPUEstimator.predict", _HOOKS_WORDING)
        path = self._checkpoint_to_use(checkpoint_path)
        if path is None:
            logger.warning("No checkpoint in %s: predicting with freshly initialised variables", self._model_dir)
        plan = self._plan(ModeKeys.PREDICT)
        holder = {}

        def features_only():
            features, _ = self._input_maker(input_fn, ModeKeys.PREDICT, holder)()
            return features, None

        with plan.environment():
            built = building.ModeGraph(self, ModeKeys.PREDICT, plan, features_only)
            spec = built.spec
            if not _has_dataset_or_queue_runner(holder["input"], built.graph):
                # tf.estimator's warning, through tf.compat.v1.logging as tf.estimator wrote it (looked up now:
                # the module a script imports, so what it patches or configures applies)
                import tensorflow.compat.v1 as tf1

                tf1.logging.warning("Input graph does not use tf.data.Dataset or contain a QueueRunner. That means "
                                    "predict yields forever. This is probably a mistake.")
            predictions = _select(spec.predictions, predict_keys)
            with built.graph.as_default():
                self._maybe_warm_start(path)
                runner, saver, ops = _prepare_restore(built, holder, hooks, spec.prediction_hooks, plan)
            built.graph.finalize()
            with built.session(plan.target) as sess:
                building.start(sess, ops, saver, self._model_dir, checkpoint_path=_explicit(checkpoint_path, path),
                               scaffold=spec.scaffold)
                runner.after_create_session(sess)
                options = built.run_options()
                while True:
                    try:
                        # Never around a yield: the dump must see only this run's error.
                        with exception_dump(self._config.options, sess, feed_dict=None, mode=ModeKeys.PREDICT):
                            if runner:
                                batch, stop = runner.run(sess, predictions, options)
                            else:
                                batch, stop = sess.run(predictions, options=options), False
                    except tf.errors.OutOfRangeError:
                        break
                    if yield_single_examples:
                        yield from _examples(batch)
                    else:
                        yield batch
                    if stop:
                        break
                runner.end(sess)

    # ---- export -------------------------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                           checkpoint_path=None):
        """Export the PREDICT graph with the newest (or given) checkpoint as a SavedModel.

        Writes `export_dir_base/<timestamp>` (written under a temporary name, then renamed) and
        returns its path. The SavedModel loads with plain `tf.saved_model.load` and serves
        `serving_default` (model_fn's `predictions`, or its `export_outputs`).
        """
        return self._export(export_dir_base, serving_input_receiver_fn, assets_extra, as_text, checkpoint_path)

    export_savedmodel = export_saved_model

    def _export(self, export_dir_base, serving_input_receiver_fn, assets_extra, as_text, checkpoint_path,
                strip_default_attrs=True):
        path = self._checkpoint_to_use(checkpoint_path)
        warm_start = None
        if path is None and self._warm_start_from is not None:
            # As tf.estimator: export the warm-start model. Its variables are initialised as training would
            # initialise them (warm start, then initialisers): the source need not hold every variable (a Keras
            # model's first checkpoint has no global step).
            from .warm_start import source_checkpoint

            if source_checkpoint(self._warm_start_from) is not None:
                warm_start = self._warm_start_from
        if path is None and warm_start is None:
            raise ValueError(f"NPUEstimator.export_saved_model: Couldn't find trained model at {self._model_dir} "
                             f"(no checkpoint; train first or give checkpoint_path)")
        return export_lib.export(self, self._plan(ModeKeys.PREDICT), export_dir_base, serving_input_receiver_fn,
                                 _explicit(checkpoint_path, path), assets_extra=assets_extra, as_text=as_text,
                                 strip_default_attrs=strip_default_attrs, warm_start=warm_start)

    # ---- checkpoints ----------------------------------------------------------------------------------------
    def latest_checkpoint(self) -> Optional[str]:
        """The newest readable checkpoint in model_dir, or None."""
        return checkpoints.latest_checkpoint(self._model_dir)

    def get_variable_names(self) -> list:
        """Names of the variables in the newest checkpoint."""
        return checkpoints.read_newest(self._model_dir, lambda path: [n for n, _ in tf.train.list_variables(path)])

    def get_variable_value(self, name: str):
        """The value of variable `name` in the newest readable checkpoint (a numpy array)."""
        return checkpoints.read_newest(self._model_dir, lambda path: tf.train.load_variable(path, name))

    def _maybe_warm_start(self, checkpoint):
        """Without a checkpoint of its own, evaluate/predict start from warm_start_from (tf.estimator's rule)."""
        if checkpoint is None and self._warm_start_from is not None:
            building.warm_start(self._warm_start_from)

    def _checkpoint_to_use(self, checkpoint_path):
        if checkpoint_path is None:
            return self.latest_checkpoint()
        path = checkpoints.resolve(str(checkpoint_path))
        if path is None:
            raise ValueError(f"No readable checkpoint at {checkpoint_path!r}")
        return path



class _InMemory(threading.local):
    active = False


_in_memory = _InMemory()  # set by InMemoryEvaluatorHook around its evaluate() calls


def _has_dataset_or_queue_runner(inp, graph) -> bool:
    """Whether predict's input ends by itself: a Dataset, features read from an iterator (top level,
    as tf.estimator checks), or queue runners."""
    if inp.dataset is not None or graph.get_collection(_v1.GraphKeys.QUEUE_RUNNERS):
        return True
    return any(isinstance(t, tf.Tensor) and t.op.type in ("IteratorGetNext", "IteratorGetNextSync")
               for t in tf.nest.flatten(inp.features))


def _explicit(given, resolved):
    """The checkpoint to restore: the one the caller gave, or None for "the newest that restores"."""
    return resolved if given is not None else None


def _prepare_restore(built, holder, hooks, spec_hooks, plan):
    """For evaluate and predict, in the graph before it is finalised: the begun hook runner, the
    saver that restores the checkpoint, and the ops that initialise what it does not restore."""
    runner = HookRunner(list(hooks or ()) + list(spec_hooks) + list(plan.hooks))
    runner.begin()  # hooks may add ops until here
    ops = (building.init_op(built.graph), building.local_init_op(built.graph), holder["input"].initializer)
    return runner, built.saver(), ops


def _run_until_end(sess, runner, update, steps, options):
    fast = sess.make_callable(update, accept_options=options is not None)
    done = 0
    try:
        while steps is None or done < steps:
            if runner:
                _, stop = runner.run(sess, update, options)
                if stop:
                    break
            elif options is not None:
                fast(options=options)
            else:
                fast()
            done += 1
    except tf.errors.OutOfRangeError:
        pass
    if steps is not None and done < steps:
        logger.info("Evaluation input ended after %d of %d steps", done, steps)
    return done


def _write_eval_summaries(directory, results, checkpoint_path):
    """The results as tf.estimator writes them: numbers as scalars, arrays as tensor summaries,
    serialised Summary protos (tf.compat.v1.summary ops used as metric values) with their values
    tagged `<key>/<i>`; then the evaluated checkpoint's path as a string tensor `checkpoint_path`."""
    summary = _v1.Summary()
    for key, value in results.items():
        if key == "global_step" or value is None:
            continue
        if isinstance(value, bytes):
            try:
                parsed = _v1.Summary.FromString(value)
            except Exception:  # protobuf's DecodeError: not a Summary
                logger.warning("Skipping summary for %s, cannot parse string to Summary.", key)
                continue
            for i, item in enumerate(parsed.value):
                item.tag = f"{key}/{i}"
            summary.value.extend(parsed.value)
        elif isinstance(value, (float, int, np.floating, np.integer)):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, np.ndarray):
            summary.value.add(tag=key, node_name=key).tensor.CopyFrom(tf.make_tensor_proto(value))
        else:
            logger.warning("Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int or "
                           "np.ndarray or a serialized string of Summary.", key)
    try:
        # `eval` / `eval_<name>` is npurun's name inside model_dir: refused when it is a planted link
        # (TensorFlow's FileWriter would create and write through it).
        safe_files.make_dir(directory, "evaluation folder")
        building.write_eval_summary(directory, summary, results["global_step"])
        if checkpoint_path:
            path_summary = _v1.Summary()
            path_summary.value.add(tag="checkpoint_path").tensor.CopyFrom(
                tf.make_tensor_proto(os.fsdecode(checkpoint_path), dtype=tf.string))
            building.write_eval_summary(directory, path_summary, results["global_step"])
    except (OSError, RuntimeError, tf.errors.OpError) as error:
        # The evaluation itself succeeded: its results are returned (and drive exporters); only
        # TensorBoard misses them (a full disk, a read-only model_dir).
        logger.warning("Could not write the evaluation results to %s (%s); they are returned, but TensorBoard will "
                       "not show this evaluation", directory, checkpoints.first_line(error))


def _select(predictions, keys):
    if keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions: predict_keys given, "
                         "but model_fn's predictions is not a dict")
    keys = [keys] if isinstance(keys, str) else list(keys)
    missing = [k for k in keys if k not in predictions]
    if missing:
        raise ValueError(f"Expected to run at least one output from {sorted(predictions)}, provided {missing}: "
                         f"predict_keys {missing} are not in the predictions")
    return {k: predictions[k] for k in keys}


def _examples(batch):
    if isinstance(batch, dict):
        sizes = {key: np.shape(value)[0] if np.ndim(value) else None for key, value in batch.items()}
        if None in sizes.values() or len(set(sizes.values())) != 1:
            raise ValueError(f"Batch length of predictions should be same: yield_single_examples needs every "
                             f"prediction to have the same batch dimension; "
                             f"got {sizes}")
        size = next(iter(sizes.values()))
        for i in range(size):
            yield {key: value[i] for key, value in batch.items()}
    else:
        if not np.ndim(batch):
            raise ValueError("yield_single_examples needs predictions with a batch dimension")
        yield from batch
