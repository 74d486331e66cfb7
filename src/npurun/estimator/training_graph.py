"""NPUEstimator.train: build the training graph and session, then run the training loop."""
from __future__ import annotations

import contextlib
import glob
import logging
import os
import warnings
from typing import Optional

import numpy as np
import tensorflow as tf

from ..debug.exception_dump import exception_dump
from ..distribute import errors as distribute_errors, feed, stop_flag as stop_flag_lib
from ..runtime import compilation, dynamic_inputs
from . import building, checkpoints, compiled_step, device_loop, host_values, rank_input
from .hooks import HookRunner
from .inner_fetches import InnerFetches
from .inputs import Input
from .loop import Program, Schedules, TrainingLoop
from .spec import ModeKeys

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1


def train(estimator, input_fn, hooks, steps, max_steps, saving_listeners) -> int:
    """Train as NPUEstimator.train documents; returns the global step reached."""
    config = estimator.config
    options = config.options
    iterations = options["iterations_per_loop"]
    chief = config.is_chief
    model_dir = estimator.model_dir
    saving = chief and bool(config.save_checkpoints_steps or config.save_checkpoints_secs)
    summarising = chief and bool(config.save_summary_steps)
    if saving_listeners and not saving:
        warnings.warn("NPUEstimator.train: saving_listeners are ignored because this process saves no "
                      "checkpoints (save_checkpoints_steps=0 or not the chief)", UserWarning, stacklevel=3)
    plan = estimator._plan(ModeKeys.TRAIN)
    whole = compilation.resolve_jit(options).mode == "whole"
    # A device loop under whole-step XLA: the whole loop is one computation over stacked input
    # ("loop"), or each iteration's step is one inside the executor's loop ("step", on a CPU).
    looped = compilation.loop_compilation(options) if iterations > 1 else "none"
    stacked = whole and (iterations == 1 or looped == "loop")
    holder = {}
    make_input = estimator._input_maker(input_fn, ModeKeys.TRAIN, holder, get_next=iterations == 1 or stacked,
                                        transform=_input_transform(options, iterations, stacked, holder))
    # With several ranks, gradient all-reduces built by model_fn carry the stop flag (stop_flag.py).
    riding = stop_flag_lib.training_graph() if plan.stop_flag is not None else contextlib.nullcontext()
    with plan.environment(), riding:
        if iterations > 1:
            def features_outside_loop():
                features = make_input()  # N stacked elements when the loop is compiled
                device_loop.check_input(holder["input"], iterations)
                return features if stacked else (None, None)

            def build_loop(features, labels):
                def compile_fn(fn, inputs):
                    return compilation.compile_step(options, fn, inputs)
                spec, holder["loop"] = device_loop.build(
                    estimator, holder["input"], iterations, _v1.train.get_global_step(),
                    compile_fn if looped == "loop" else None, hooks=list(hooks) + list(plan.hooks),
                    compile_iteration=compile_fn if looped == "step" else None)
                return spec
            built = building.ModeGraph(estimator, ModeKeys.TRAIN, plan, features_outside_loop, build_loop)
        elif whole:
            def build_compiled(features, labels):
                spec, holder["step"] = compiled_step.build(estimator, options, features, labels)
                return spec
            built = building.ModeGraph(estimator, ModeKeys.TRAIN, plan, make_input, build_compiled)
        else:
            built = building.ModeGraph(estimator, ModeKeys.TRAIN, plan, make_input)
        spec, graph = built.spec, built.graph
        with graph.as_default():
            if iterations > 1:
                program = _loop_program(built, holder["loop"], iterations)
            else:
                program = _single_step_program(built, summarising, holder.get("step"))
            inner = None
            if iterations > 1 or whole:
                where = "inside the device loop" if iterations > 1 else "inside the XLA-compiled step"
                last_loss = program.losses[-1] if program.losses is not None else program.loss
                named = holder["loop"].named if iterations > 1 else []
                inner = InnerFetches(graph, [(spec.loss, last_loss)] + named, where)
            chief_hooks = list(spec.training_chief_hooks) if chief else []  # as tf.estimator: the chief only
            all_hooks = list(hooks) + list(spec.training_hooks) + chief_hooks + list(plan.hooks)
            if inner is not None:
                inner.adopt(all_hooks)
            runner = HookRunner(all_hooks, inner)
            try:
                runner.begin()  # hooks may add ops (and summaries) until here
            except (ValueError, TypeError) as error:
                if inner is not None:
                    inner.explain_begin_failure(error)
                raise
            if summarising:
                program.summary = _outer_summaries(graph)
            savers, input_state = _savers(built, holder["input"], holder.get("fed", False))
            stop_flag = plan.stop_flag() if plan.stop_flag is not None else None  # ranks agree when to stop
            if stop_flag is not None:
                logger.debug("The ranks agree when to stop: stop flag %s", stop_flag.kind)
            own_input = rank_input.build(holder["input"], input_state, model_dir, chief, stop_flag)
            finite = checkpoints.finite_check(_v1.global_variables()) if saving else None
            if estimator._warm_start_from is not None and checkpoints.latest_checkpoint(model_dir) is None:
                building.warm_start(estimator._warm_start_from)
            start_ops = (building.init_op(graph), building.local_init_op(graph), holder["input"].initializer)
        graph.finalize()
        if chief and saving:
            # As tf.estimator's checkpoint saver did: the training graph as text, for TensorBoard
            # and tools that read <model_dir>/graph.pbtxt.
            try:
                tf.io.write_graph(graph.as_graph_def(add_shapes=True), model_dir, "graph.pbtxt")
            except tf.errors.OpError as error:  # a full disk: the checkpoint save says so, in one paragraph
                logger.warning("Could not write %s/graph.pbtxt (%s)", model_dir, checkpoints.first_line(error))
                # TensorFlow's atomic write leaves its temporary file behind, filling the disk further.
                for leftover in glob.glob(os.path.join(glob.escape(model_dir), "graph.pbtxt.tmp*")):
                    checkpoints.remove_quietly(leftover)
        writer = None
        if chief and (summarising or options["log_step_count_steps"]):
            writer = building.summary_writer(model_dir, graph)
        writer_ckpt = (checkpoints.CheckpointWriter(savers, model_dir, options["keep_checkpoint_max"],
                                                    options["keep_checkpoint_every_n_hours"], saving_listeners,
                                                    input_state=input_state, finite_check=finite)
                       if saving else None)
        try:
            with built.session(plan.target) as sess, distribute_errors.explained(config):
                restored = building.start(sess, start_ops, savers, model_dir, quarantine=saving, resume_input=True,
                                          wait_for_initialization=plan.wait_for_initialization,
                                          scaffold=spec.scaffold)
                if own_input is not None:  # this rank's own input position over the chief's, if it saved one
                    own_input.restore(sess, restored, checkpoints.finished_step(model_dir))
                if stop_flag is not None:
                    sess.run(stop_flag.start_op)
                start_step = int(sess.run(program.global_step))
                # The input position was restored too: a restart after a crash (see restore_newest).
                position_restored = bool(restored) and len(savers) > 1 and \
                    checkpoints.checkpoint_step(restored) != checkpoints.finished_step(model_dir)
                last_step = start_step + steps if steps is not None else max_steps
                if last_step is not None and start_step >= last_step:
                    logger.info("Global step %d is already at or past %d: nothing to train", start_step, last_step)
                    return start_step
                _check_multiple(iterations, start_step, last_step, steps)
                runner.after_create_session(sess)
                if writer_ckpt is not None:
                    writer_ckpt.begin(sess)
                    writer_ckpt.save(sess, start_step)  # as tf.estimator: the state training starts from
                loop = TrainingLoop(sess, program, Schedules(
                    checkpoint_steps=config.save_checkpoints_steps, checkpoint_secs=config.save_checkpoints_secs,
                    summary_steps=config.save_summary_steps, log_steps=options["log_step_count_steps"]),
                    runner, writer_ckpt, writer, built.run_options(), stop_flag)
                with exception_dump(options, sess, feed_dict=None, mode=ModeKeys.TRAIN), \
                        compilation.explained_compile_errors(options, graph):
                    step = loop.run(start_step, last_step)
                    if loop.input_ended and step == start_step and position_restored and \
                            holder["input"].initializer is not None:
                        step = _restart_input(sess, loop, holder["input"], restored, start_step, last_step)
                if writer_ckpt is not None:
                    if writer_ckpt.last_saved_step != step:
                        writer_ckpt.save(sess, step)
                    writer_ckpt.end(sess, step)
                    if not loop.preempted:
                        checkpoints.mark_finished(model_dir, step)
                own_saved = own_input.save(sess, step) if own_input is not None and loop.preempted else None
                if loop.watch.requested:
                    _log_preemption(loop.watch, step, writer_ckpt, own_saved)
                runner.end(sess)
                if loop.last_loss is not None and np.size(loop.last_loss):
                    logger.info("Loss for final step %d: %.6g", step, float(np.ravel(loop.last_loss)[-1]))
                return step
        finally:
            if writer is not None:
                writer.close()


def _restart_input(sess, loop, inp, restored, start_step, last_step) -> int:
    """The restored input position ended the input before the first step: it belongs to an input
    pipeline that changed since the checkpoint (e.g. shuffle added or removed), since a run that
    reached the input's end marks its checkpoint finished. Read the input from its start, as
    tf.estimator always did, rather than end training having done nothing."""
    logger.warning("The input position restored from %s ended the input before the first step: the input_fn "
                   "probably changed since that checkpoint was written, so its position does not apply. Reading "
                   "the input from its start (the resume is not exact)", restored)
    sess.run(inp.initializer)
    return loop.run(start_step, last_step)


def _log_preemption(watch, step, writer_ckpt, own_saved=None):
    if own_saved is not None:
        where = f"saved this rank's input position to {own_saved} (the chief saves the checkpoint)"
    elif writer_ckpt is not None:
        where = f"saved {writer_ckpt.last_saved} with the input position" if writer_ckpt.saves_input_position \
            else f"saved {writer_ckpt.last_saved} (variables only: the input position is not saved for this input)"
    else:
        where = "this process saves no checkpoints (not the chief, or save_checkpoints_steps=0)"
    source = " (received by another rank)" if watch.from_peer else ""
    logger.warning("%s%s: training stopped at global step %d; %s; exiting with status %d", watch.name(), source, step,
                   where, watch.exit_status)


def _check_multiple(iterations, start_step, last_step, steps):
    if iterations == 1 or last_step is None:
        return
    total = last_step - start_step
    if total % iterations:
        what = f"steps={steps}" if steps is not None else f"max_steps={last_step} minus the restored global step " \
                                                          f"{start_step} = {total}"
        raise ValueError(f"NPUEstimator.train: the steps of this call ({what}) must be a multiple of "
                         f"iterations_per_loop={iterations}")


def _input_transform(options, iterations, stack, holder):
    """The training dataset as the options want it: shape-range checks (dynamic inputs), fed by the
    host's feeding rank (local_rank_id), N elements stacked for a compiled device loop."""
    def transform(dataset):
        dataset = dynamic_inputs.apply_to_dataset(options, dataset)
        fed = feed.apply(dataset, options["local_rank_id"], options["local_device_list"])
        holder["fed"] = fed is not dataset  # a tf.data service read has no position to checkpoint
        return compilation.stack_for_loop(fed, iterations) if stack and iterations > 1 else fed
    return transform


def _single_step_program(built, summarising, compiled: Optional[compiled_step.CompiledStep]) -> Program:
    """One training step per run: fetch the global step after train_op, and the loss."""
    global_step, spec = built.global_step, built.spec
    run_step = spec.train_op if compiled is None else compiled.loss
    loss = spec.loss if compiled is None else compiled.loss
    with tf.control_dependencies([run_step]):
        step_after = global_step.read_value()
    if summarising:
        _v1.summary.scalar("loss", loss)
    program = Program(global_step=global_step.read_value(), step_after=step_after, loss=loss)
    host_call = host_values.combine(spec.host_call) if compiled is None else compiled.host_call
    if host_call is not None:
        tensors = host_call[1] if compiled is None else compiled.host_values
        program.host_call = device_loop.HostCall(host_call, tensors)
        program.host_values = tensors
    return program


def _loop_program(built, outputs: device_loop.LoopOutputs, iterations) -> Program:
    """A device loop per run: its per-iteration losses and host_call buffers come back to the host."""
    program = Program(global_step=built.global_step.read_value(), step_after=outputs.step_after,
                      loss=outputs.loss, steps_per_run=iterations, losses=outputs.losses,
                      buffered_losses=outputs.buffered_losses)
    if outputs.host_call is not None:
        one_iteration = [tf.TensorSpec(v.shape[1:], v.dtype) for v in outputs.host_values]
        program.host_call = device_loop.HostCall(outputs.host_call, one_iteration)
        program.host_values = outputs.host_values
        program.buffered_host_values = outputs.buffered_host_values
    return program


def _outer_summaries(graph):
    """merge_all() of the summaries that live in the graph itself (those model_fn built inside a
    device loop or compiled step were lifted to the host call; see host_values.py)."""
    tensors = [t for t in graph.get_collection(_v1.GraphKeys.SUMMARIES) if t.graph is graph]
    return _v1.summary.merge(tensors) if tensors else None


def _savers(built, inp: Input, fed: bool = False):
    """Savers to try in order: with the input pipeline's position (exact resume), then without it
    (for inputs whose state cannot be serialised, and checkpoints written without it); and the
    tensor serialising the input position (CheckpointWriter.begin runs it once to decide), or None."""
    plain = built.saver()
    if inp.iterator is None or getattr(built.spec.scaffold, "saver", None) is not None or fed:
        return [plain], None
    # The iterator is a Trackable whose state serialises with ExternalStatePolicy.FAIL: the Saver takes
    # it as it is (make_saveable_from_iterator, deprecated, made the same "<resource>_STATE" entry).
    from tensorflow.python.training.saving import saveable_object_util

    # what the plain Saver saves (global variables and the SAVEABLE_OBJECTS collection: checkpointed
    # MutableHashTable / DenseHashTable, make_saveable_from_iterator), and the input position
    var_list = saveable_object_util.op_list_to_dict(
        _v1.global_variables() + _v1.get_collection(_v1.GraphKeys.SAVEABLE_OBJECTS))
    var_list[inp.iterator._iterator_resource.name] = inp.iterator
    with_input = _v1.train.Saver(var_list=var_list, sharded=False, max_to_keep=None, allow_empty=True)
    # What that entry serialises, run once before training (CheckpointWriter.begin) to decide
    # whether checkpoints can hold the input position.
    probe = tf.raw_ops.SerializeIterator(resource_handle=inp.iterator._iterator_resource,
                                         external_state_policy=tf.data.experimental.ExternalStatePolicy.FAIL.value)
    return [with_input, plain], probe
