"""NPUEstimator.train: build the training graph and session, then run the training loop."""
from __future__ import annotations

import logging
import warnings

import numpy as np
import tensorflow as tf

from ..debug.exception_dump import exception_dump
from . import building, checkpoints, device_loop
from .hooks import HookRunner
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
    holder = {}
    make_input = estimator._input_maker(input_fn, ModeKeys.TRAIN, holder, get_next=iterations == 1)
    with plan.environment():
        if iterations > 1:
            def features_outside_loop():
                make_input()
                device_loop.check_input(holder["input"], iterations)
                return None, None

            def build_loop(features, labels):
                spec, holder["loop"] = device_loop.build(estimator, holder["input"], iterations,
                                                         _v1.train.get_global_step())
                return spec
            built = building.ModeGraph(estimator, ModeKeys.TRAIN, plan, features_outside_loop, build_loop)
        else:
            built = building.ModeGraph(estimator, ModeKeys.TRAIN, plan, make_input)
        spec, graph = built.spec, built.graph
        with graph.as_default():
            program = (_loop_program(built, holder["loop"], iterations) if iterations > 1
                       else _single_step_program(built, summarising))
            runner = HookRunner(list(hooks) + list(spec.training_hooks) + list(plan.hooks))
            runner.begin()  # hooks may add ops (and summaries) until here
            if summarising:
                program.summary = _outer_summaries(graph)
            savers = _savers(built, holder["input"])
            if estimator._warm_start_from is not None and checkpoints.latest_checkpoint(model_dir) is None:
                building.warm_start(estimator._warm_start_from)
            start_ops = (building.init_op(graph), building.local_init_op(graph), holder["input"].initializer)
        graph.finalize()
        writer = None
        if chief and (summarising or options["log_step_count_steps"]):
            writer = building.summary_writer(model_dir, graph)
        writer_ckpt = (checkpoints.CheckpointWriter(savers, model_dir, options["keep_checkpoint_max"],
                                                    options["keep_checkpoint_every_n_hours"], saving_listeners)
                       if saving else None)
        try:
            with built.session(config.master) as sess:
                building.start(sess, start_ops, savers, model_dir, quarantine=saving, resume_input=True)
                start_step = int(sess.run(program.global_step))
                last_step = start_step + steps if steps is not None else max_steps
                if last_step is not None and start_step >= last_step:
                    logger.info("Global step %d is already at or past %d: nothing to train", start_step, last_step)
                    return start_step
                _check_multiple(iterations, start_step, last_step, steps)
                runner.after_create_session(sess)
                if writer_ckpt is not None:
                    writer_ckpt.begin()
                loop = TrainingLoop(sess, program, Schedules(
                    checkpoint_steps=config.save_checkpoints_steps, checkpoint_secs=config.save_checkpoints_secs,
                    summary_steps=config.save_summary_steps, log_steps=options["log_step_count_steps"]),
                    runner, writer_ckpt, writer, built.run_options())
                with exception_dump(options, sess, feed_dict=None, mode=ModeKeys.TRAIN):
                    step = loop.run(start_step, last_step)
                if writer_ckpt is not None:
                    if writer_ckpt.last_saved_step != step:
                        writer_ckpt.save(sess, step)
                    writer_ckpt.end(sess, step)
                    checkpoints.mark_finished(model_dir, step)
                runner.end(sess)
                if loop.last_loss is not None and np.size(loop.last_loss):
                    logger.info("Loss for final step %d: %.6g", step, float(np.ravel(loop.last_loss)[-1]))
                return step
        finally:
            if writer is not None:
                writer.close()


def _check_multiple(iterations, start_step, last_step, steps):
    if iterations == 1 or last_step is None:
        return
    total = last_step - start_step
    if total % iterations:
        what = f"steps={steps}" if steps is not None else f"max_steps={last_step} minus the restored global step " \
                                                          f"{start_step} = {total}"
        raise ValueError(f"NPUEstimator.train: the steps of this call ({what}) must be a multiple of "
                         f"iterations_per_loop={iterations}")


def _single_step_program(built, summarising) -> Program:
    """One training step per run: fetch the global step after train_op, and the loss."""
    global_step, spec = built.global_step, built.spec
    with tf.control_dependencies([spec.train_op]):
        step_after = global_step.read_value()
    if summarising:
        _v1.summary.scalar("loss", spec.loss)
    program = Program(global_step=global_step.read_value(), step_after=step_after, loss=spec.loss)
    if spec.host_call is not None:
        tensors = device_loop._flat(spec.host_call[1])
        program.host_call = device_loop.HostCall(spec.host_call, tensors)
        program.host_values = tensors
    return program


def _loop_program(built, outputs: device_loop.LoopOutputs, iterations) -> Program:
    """A device loop per run: its per-iteration losses and host_call buffers come back to the host."""
    program = Program(global_step=built.global_step.read_value(), step_after=outputs.step_after,
                      loss=outputs.loss, steps_per_run=iterations, losses=outputs.losses)
    spec = built.spec
    if spec.host_call is not None:
        one_iteration = [tf.TensorSpec(v.shape[1:], v.dtype) for v in outputs.host_values]
        program.host_call = device_loop.HostCall(spec.host_call, one_iteration)
        program.host_values = outputs.host_values
    return program


def _outer_summaries(graph):
    """merge_all() of the summaries that live in the graph itself: those model_fn built inside a
    device loop cannot be fetched (they belong to the loop's body)."""
    tensors = [t for t in graph.get_collection(_v1.GraphKeys.SUMMARIES) if t.graph is graph]
    return _v1.summary.merge(tensors) if tensors else None


def _savers(built, inp: Input):
    """Savers to try in order: with the input pipeline's position (exact resume), then without it
    (for inputs whose state cannot be serialised, and checkpoints written without it)."""
    plain = built.saver()
    if inp.iterator is None or built.spec.scaffold is not None:
        return [plain]
    saveable = tf.data.experimental.make_saveable_from_iterator(inp.iterator, external_state_policy="fail")
    with_input = _v1.train.Saver(var_list=_v1.global_variables() + [saveable], sharded=False, max_to_keep=None,
                                 allow_empty=True)
    return [with_input, plain]
