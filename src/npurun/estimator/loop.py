"""The training loop: a plain Session, cached callables, and schedules decided by step numbers.

A run is one `Session.run` of the training program: one step, or up to N steps when the program
is a device loop (`iterations_per_loop`, see device_loop.py). Before each run the loop knows the
global step it will reach (`step + N`), so it decides with integer comparisons whether a summary,
a log line or a checkpoint is due there. Runs where nothing is due and no hook takes part go
through the innermost loop: a cached `Session.make_callable` and one comparison per run.

Rules (also in docs/estimator.md):
  - checkpoints at the first run boundary at or after each multiple of save_checkpoints_steps,
    or when save_checkpoints_secs passed (checked at each run); one more when training ends;
  - summaries every save_summary_steps: in single-step mode the merged summary ops (with the
    loss) at each multiple; in a device loop the loss of every iteration that reached a multiple,
    and model_fn's summaries and host_call through the host call (see host_values.py);
  - a log line (loss; in a loop the last and the mean of the run) after the first run (as TF 1's
    LoggingTensorHook logged its first iteration), and with global_step/sec at the first boundary at
    or after each multiple of log_step_count_steps, plus a global_step/sec summary on the chief;
  - a NaN loss stops training with NanLossDuringTrainingError (as tf.estimator's NanTensorHook);
  - the input ending (OutOfRangeError, also from inside a device loop) ends training normally; the
    iterations of a loop the input ended inside are reported like a whole loop's;
  - a SIGTERM / SIGINT (see preemption.py) ends the loop after the run in flight (`preempted`);
    with a `stop_flag` (several ranks, see distribute/stop_flag.py) the signalled rank raises the
    flag before its next run, and every rank ends the loop after the run that returned it raised;
  - a train_op that leaves the global step where it was for STALL_LIMIT runs in a row is a
    GlobalStepStalledError; runs skipped because a loss-scale overflow was detected (the
    managers' `skipped_steps` grew) are counted apart, with their own, larger limit
    (OVERFLOW_LIMIT: the gradients are NaN/Inf whatever the scale).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from ..precision.loss_scale import SKIPPED_COLLECTION
from .. import preemption
from ..reporting import UserFixableError
from . import checkpoints as ckpt_lib
from .device_loop import HostCall, scheduled_steps
from .hooks import NEVER, HookRunner, Progress, RateMeter, StepSchedule, TimeSchedule

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1


STALL_LIMIT = 100  # runs in a row without global-step progress (not loss-scale skips) before the error
OVERFLOW_LIMIT = 2000  # runs in a row skipped for loss-scale overflow before the error


class NanLossDuringTrainingError(UserFixableError, _v1.train.NanLossDuringTrainingError):
    """The training loss became NaN (TensorFlow's class, so `except` on either catches it)."""


class GlobalStepStalledError(UserFixableError, RuntimeError):
    """The train_op does not advance the global step, so training would never end."""


@dataclass
class Program:
    """What training runs fetch.

    global_step: the global step (read without running anything else); step_after: the global
    step after the run's update(s); loss: a scalar (the step's loss, or the mean of a loop's);
    losses: a loop's per-iteration losses (None for single steps); summary: merged summary ops
    or None; host_call / host_values: the HostCall and the tensors it is fed ([count, ...] in a
    loop, one step's values otherwise); steps_per_run: N.
    """

    global_step: Any
    step_after: Any
    loss: Any
    steps_per_run: int = 1
    losses: Any = None
    summary: Any = None
    host_call: Optional[HostCall] = None
    host_values: Any = None
    buffered_losses: Any = None  # a loop's buffers, readable after a loop the input ended inside
    buffered_host_values: Any = None


@dataclass
class Schedules:
    checkpoint_steps: Optional[int]
    checkpoint_secs: Optional[float]
    summary_steps: Optional[int]
    log_steps: Optional[int]


class TrainingLoop:
    """Runs `program` from `start_step` until `last_step` (None: until the input ends or a stop)."""

    def __init__(self, sess, program: Program, schedules: Schedules, runner: HookRunner,
                 saver: Optional[ckpt_lib.CheckpointWriter], summary_writer, run_options=None, stop_flag=None):
        self.sess = sess
        self.program = program
        self.schedules = schedules
        self.runner = runner
        self.saver = saver
        self.writer = summary_writer
        self.run_options = run_options
        self.last_loss = None
        self._fetch_dicts = {}
        self.watch = preemption.current()
        self.stop_flag = stop_flag  # distribute.stop_flag.StopFlag, or None: stop on this process's signal
        self._agreed = 0  # what the last run's stop flag said (0, or the signal some rank received)
        self._flag_raised = False
        self.preempted = False
        self.input_ended = False
        self.overflow_skips = 0  # runs that left the global step because of a loss-scale overflow
        self._stall_step, self._stalls, self._overflows, self._skipped = None, 0, 0, None
        self._skip_counters = list(sess.graph.get_collection(SKIPPED_COLLECTION))  # loss-scale managers'

    def _stopping(self) -> bool:
        """Whether to stop before the next run. Alone: when a signal arrived. With a stop flag: when
        a run returned it raised (after raising it once, here, when this process was signalled)."""
        if self.stop_flag is None:
            return self.watch.signum is not None
        if self.watch.signum is not None and not self._flag_raised:
            self.stop_flag.raise_(self.sess, self.watch.signum)
            self._flag_raised = True
        return self._agreed != 0

    def _fast_callable(self):
        fetches = [self.program.step_after, self.program.loss]
        if self.stop_flag is not None:
            fetches.append(self.stop_flag.agreed)
        fn = self.sess.make_callable(fetches, accept_options=self.run_options is not None)
        if self.run_options is None:
            return fn
        options = self.run_options
        return lambda: fn(options=options)

    def run(self, start_step: int, last_step: Optional[int]) -> int:
        """Train; returns the global step reached."""
        program, s = self.program, self.schedules
        inc = program.steps_per_run
        last = NEVER if last_step is None else last_step
        saving = self.saver is not None and bool(s.checkpoint_steps or s.checkpoint_secs)
        ckpt = StepSchedule(s.checkpoint_steps if saving else None, start_step)
        timed = TimeSchedule(s.checkpoint_secs if saving else None, lambda: ckpt_lib.clock())
        summarising = self.writer is not None and bool(s.summary_steps)
        summaries = StepSchedule(s.summary_steps if summarising else None, start_step)
        logs = StepSchedule(s.log_steps, start_step)
        progress = Progress(start_step, last_step)
        self.meter = RateMeter(start_step)
        fast = self._fast_callable()
        step, first, stop, ended = start_step, True, False, False
        watch, agreeing = self.watch, self.stop_flag is not None
        if self._skip_counters:
            self._skipped = int(sum(self.sess.run(self._skip_counters)))
        try:
            while not stop and step < last and not self._stopping():
                target = min(last, ckpt.due, summaries.due, logs.due, progress.schedule.due)
                if not self.runner and not first:
                    step, loss = self._hot(fast, step, inc, target, timed)
                    if loss is not None:
                        self.last_loss = loss
                    if step >= last or self._stopping():
                        break
                previous = step
                want_summary = summarising and step + inc >= summaries.due
                # the first run logs its loss too, as TF 1's LoggingTensorHook did at its first iteration (launch
                # scripts grep "loss =" even from a run shorter than log_step_count_steps)
                first_log = first and bool(s.log_steps) and step == start_step
                want_losses = want_summary or step + inc >= logs.due or first_log
                results, stop = self.runner.run(self.sess, self._fetches(want_summary, want_losses), self.run_options)
                step, loss = int(results["step"]), results["loss"]
                if agreeing:
                    self._agreed = int(results["stop"])
                self.last_loss = results.get("losses", loss)
                if step == previous:
                    skips = self.overflow_skips
                    self._stalled(step)
                    if first and self.overflow_skips > skips:
                        # A loss-scale overflow skipped the update (counted in the manager's
                        # skipped_steps): normal while a dynamic scale is still too large.
                        logger.info("The first training run skipped its update: the loss scale overflowed (NaN/Inf "
                                    "gradients), so the global step stays at %d until the loss scale manager has "
                                    "lowered the scale; skipped runs are counted in its skipped_steps", step)
                    elif first:
                        logger.warning("The global step did not advance (%d): the train_op should increment it, "
                                       "e.g. optimizer.minimize(loss, global_step=tf.compat.v1.train."
                                       "get_global_step())", step)
                first = False
                if np.any(np.isnan(loss)):
                    self._nan(step)
                if want_summary:
                    self._summaries(results, previous, step)
                    summaries.reset(step)
                if step >= logs.due:
                    self._log(step, self.last_loss)
                    logs.reset(step)
                elif first_log:
                    self._log(step, self.last_loss, with_rate=False)
                if step >= progress.schedule.due:
                    progress.show(step, float(np.mean(loss)))
                if step >= ckpt.due or timed.is_due():
                    stop = self.saver.save(self.sess, step) or stop
                    ckpt.reset(step)
                    timed.reset()
        except tf.errors.OutOfRangeError:
            # The input ended: a normal end of training. Read where the global step really is.
            step = int(self.sess.run(program.global_step))
            ended = True
            self._partial_loop(start_step, step, summarising)
        finally:
            progress.close()
        if self._agreed and watch.signum is None:
            watch.adopt(int(self._agreed))  # another rank was signalled: stop as it does
        self.preempted = (watch.signum is not None or self._agreed != 0) and not ended and step < last
        self.input_ended = ended
        if ended:
            logger.info("Input ended at global step %d", step)
        return step

    def _hot(self, fast, step, inc, target, timed):
        """Runs with nothing due, until the next run would reach `target`; returns (step, last loss
        or None when nothing ran)."""
        loss = None
        agreeing = self.stop_flag is not None
        if timed.secs is None:
            while step + inc < target and not self._stopping():
                if agreeing:
                    new, loss, self._agreed = fast()
                else:
                    new, loss = fast()
                if loss != loss:
                    self._nan(new)
                if new == step:
                    self._stalled(new)
                step = new
            return step, loss
        deadline = timed.last + timed.secs
        while step + inc < target and ckpt_lib.clock() < deadline and not self._stopping():
            if agreeing:
                new, loss, self._agreed = fast()
            else:
                new, loss = fast()
            if loss != loss:
                self._nan(new)
            if new == step:
                self._stalled(new)
            step = new
        return step, loss

    def _stalled(self, step):
        """A run left the global step at `step`: count it (apart when a loss-scale overflow skipped
        it) and raise GlobalStepStalledError after STALL_LIMIT such runs in a row."""
        if step != self._stall_step:
            self._stall_step, self._stalls, self._overflows = step, 0, 0
        if self._skip_counters:
            skipped = int(sum(self.sess.run(self._skip_counters)))
            grew = skipped > self._skipped
            self._skipped = skipped
            if grew:
                self.overflow_skips += 1
                self._overflows += 1
                if self._overflows >= OVERFLOW_LIMIT:
                    raise GlobalStepStalledError(
                        f"The global step stayed at {step} for {self._overflows} training runs in a row, each "
                        f"skipped because the loss scale overflowed: the gradients are NaN/Inf whatever the scale. "
                        f"Check the loss and the input for NaN/Inf, or lower the learning rate")
                return
        self._stalls += 1
        if self._stalls >= STALL_LIMIT:
            raise GlobalStepStalledError(
                f"The global step stayed at {step} for {self._stalls} training runs in a row: the train_op "
                f"does not advance it, so training would never reach its end. Pass the global step to the "
                f"optimizer, e.g. optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step()), "
                f"or group the train_op with tf.compat.v1.assign_add(global_step, 1)")

    def _fetches(self, want_summary, want_losses) -> dict:
        # The same dict object for the same choice, so HookRunner's cached callables apply.
        key = (want_summary, want_losses)
        if key not in self._fetch_dicts:
            self._fetch_dicts[key] = self._build_fetches(want_summary, want_losses)
        return self._fetch_dicts[key]

    def _build_fetches(self, want_summary, want_losses) -> dict:
        program = self.program
        fetches = {"step": program.step_after, "loss": program.loss}
        if self.stop_flag is not None:
            fetches["stop"] = self.stop_flag.agreed
        if want_losses and program.losses is not None:
            fetches["losses"] = program.losses
        if want_summary:
            if program.summary is not None:
                fetches["summary"] = program.summary
            if program.host_call is not None:
                fetches["host"] = program.host_values
        return fetches

    def _summaries(self, results, previous, step):
        every = self.schedules.summary_steps
        if "summary" in results:
            self.writer.add_summary(results["summary"], step)
        if "losses" in results:
            for at in scheduled_steps(previous, step, every):
                value = float(results["losses"][at - previous - 1])
                self.writer.add_summary(_v1.Summary(value=[_v1.Summary.Value(tag="loss", simple_value=value)]), at)
        if "host" in results:
            values = results["host"] if self.program.losses is not None else [[v] for v in results["host"]]
            steps = scheduled_steps(previous, step, every) if self.program.losses is not None else [step]
            self.program.host_call.write(self.sess, self.writer, values, steps, previous + 1)

    def _partial_loop(self, start_step, step, summarising):
        """Report the iterations of a device loop the input ended inside (the loss buffer's last
        slot counts them)."""
        program = self.program
        if program.buffered_losses is None or step == start_step:
            return
        fetches = {"losses": program.buffered_losses}
        if summarising and program.host_call is not None:
            fetches["host"] = program.buffered_host_values
        values = self.sess.run(fetches)
        ran = int(values["losses"][-1])
        if ran in (0, program.steps_per_run):  # the input ended between loops: nothing new
            return
        losses = values["losses"][:ran]
        self.last_loss = losses
        if np.any(np.isnan(losses)):
            self._nan(step)
        previous = step - ran
        if summarising:
            results = {"losses": losses}
            if "host" in values:
                results["host"] = [v[:ran] for v in values["host"]]
            self._summaries(results, previous, step)
        if self.schedules.log_steps:
            self._log(step, losses)

    def _nan(self, step):
        raise NanLossDuringTrainingError(f"NaN loss during training (global step {step})")

    def _log(self, step, loss, with_rate=True):
        rate = self.meter.rate(step)  # (the first run's is not shown: it holds the start-up, as TF 1's did not)
        rate = rate if with_rate else None
        values = np.asarray(loss)
        if values.ndim and values.size:
            logger.info("loss = %.6g (mean of the last %d steps %.6g), step = %d", values[-1], values.size,
                        values.mean(), step)
        elif not values.ndim:
            logger.info("loss = %.6g, step = %d", float(values), step)
        if rate is not None:
            logger.info("global_step/sec: %.4g", rate)
            if self.writer is not None:
                summary = _v1.Summary(value=[_v1.Summary.Value(tag="global_step/sec", simple_value=rate)])
                self.writer.add_summary(summary, step)
