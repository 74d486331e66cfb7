"""Faults found by probing #15's guarantees from outside (docs/estimator.md, "What survives what"):
a signal during train_and_evaluate, non-finite non-trainable variables, full disks during export
and evaluation, odd lock files, readers under fast eviction. Each test failed before its fix."""
import glob
import json
import logging
import os
import re
import signal
import warnings

import numpy as np
import pytest
import tensorflow as tf

import npurun
from estimator_helpers import checkpoint_steps, input_fn_for, make_data, model_fn
from npurun.estimator import EvalSpec, NPUEstimator, TrainSpec, checkpoints, export as export_lib, train_and_evaluate
from npurun.estimator.exporters import LatestExporter

v1 = tf.compat.v1
X, Y = make_data()


def _config(**options):
    options.setdefault("log_step_count_steps", None)
    options.setdefault("save_checkpoints_steps", 5)
    options.setdefault("tf_random_seed", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return npurun.NPURunConfig(**options)


def _serving_fn():
    return export_lib.build_raw_serving_input_receiver_fn({"x": tf.TensorSpec([None, 4], tf.float32)})


class _Batches(v1.train.SessionRunHook):
    """Counts evaluation batches; sends SIGTERM to this process at batch `signal_at`."""

    def __init__(self, signal_at=None):
        self.batches = 0
        self.signal_at = signal_at

    def after_run(self, run_context, run_values):
        self.batches += 1
        if self.batches == self.signal_at:
            os.kill(os.getpid(), signal.SIGTERM)


class _SignalAtStep(v1.train.SessionRunHook):
    def __init__(self, step):
        self.at = step

    def begin(self):
        self._step = v1.train.get_global_step()

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 == self.at:
            os.kill(os.getpid(), signal.SIGTERM)


def _exports(model_dir):
    return sorted(os.listdir(os.path.join(model_dir, "export", "latest"))) \
        if os.path.isdir(os.path.join(model_dir, "export", "latest")) else []


def test_a_signal_in_train_and_evaluate_saves_and_exits_without_evaluating_or_exporting(tmp_path):
    """Before: the checkpoint the signal saved was evaluated and exported before the exit."""
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    batches = _Batches()
    train = TrainSpec(input_fn_for(X, Y, shuffle=True, seed=1), max_steps=100, hooks=[_SignalAtStep(7)])
    evaluation = EvalSpec(input_fn_for(X, Y, repeat=False), steps=None, throttle_secs=0, hooks=[batches],
                          exporters=[LatestExporter("latest", _serving_fn())])
    with pytest.raises(SystemExit) as stopped:
        train_and_evaluate(est, train, evaluation)
    assert stopped.value.code == 143
    assert checkpoint_steps(model_dir) == [0, 5, 7]  # the signal's checkpoint at the step reached
    assert batches.batches == len(X) // 8  # one evaluation: the checkpoint of step 5, not of step 7
    assert len(_exports(model_dir)) == 1


def test_a_signal_during_an_evaluation_in_train_and_evaluate_abandons_it(tmp_path):
    """Before: the evaluation ran to its end, then its export, then training stopped."""
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    batches = _Batches(signal_at=2)
    train = TrainSpec(input_fn_for(X, Y, shuffle=True, seed=1), max_steps=100)
    evaluation = EvalSpec(input_fn_for(X, Y, repeat=False), steps=None, throttle_secs=0, hooks=[batches],
                          exporters=[LatestExporter("latest", _serving_fn())])
    with pytest.raises(SystemExit) as stopped:
        train_and_evaluate(est, train, evaluation)
    assert stopped.value.code == 143
    assert batches.batches == 2  # abandoned at the batch the signal came in, of 12
    assert _exports(model_dir) == []
    assert not glob.glob(os.path.join(model_dir, "eval", "events.*"))  # nothing written for a partial pass
    assert checkpoint_steps(model_dir) == [0, 5]  # the evaluated checkpoint stays the newest
    assert checkpoints.is_readable(os.path.join(model_dir, "model.ckpt-5"))


def _model_with_moving_mean(features, labels, mode, params):
    """Batch-norm-like: training centres with the batch mean and updates a moving mean (not
    trainable), which only evaluation and serving use; a NaN there leaves the training loss finite."""
    x = features["x"]
    moving = v1.get_variable("stats/moving_mean", [4], trainable=False, initializer=v1.zeros_initializer())
    best = v1.get_variable("stats/best_loss", [], trainable=False, initializer=v1.constant_initializer(np.inf))
    if mode == "train":
        centred = x - tf.reduce_mean(x, 0)
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign(moving, 0.9 * moving + 0.1 * tf.reduce_mean(x, 0)))
    else:
        centred = x - moving
    spec = model_fn({"x": centred}, labels, mode, params)
    if mode != "train":
        return spec
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS) + [best]):
        train_op = tf.group(spec.train_op)
    return spec._replace(train_op=train_op)


class _Poison(v1.train.SessionRunHook):
    """Sets the variable `name` to NaN after the run that reaches global step `at`."""

    def __init__(self, name, at):
        self.name, self.at = name, at

    def begin(self):
        variable = [v for v in v1.global_variables() if v.op.name == self.name][0]
        self._poison = variable.assign(tf.fill(tf.shape(variable), np.float32(np.nan)))
        self._step = v1.train.get_global_step()

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 == self.at:
            run_context.session.run(self._poison)


def test_a_non_trainable_variable_going_nan_never_replaces_the_last_good_checkpoint(tmp_path):
    """Before: only trainable variables were checked; checkpoints with a NaN moving mean replaced
    the good ones and training went on (its loss stays finite). A non-trainable variable that is
    Inf from the start (stats/best_loss) is how the model was made, not an error."""
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(_model_with_moving_mean, model_dir=model_dir, config=_config())
    with pytest.raises(checkpoints.NonFiniteVariableError, match=r"The variable stats/moving_mean holds NaN or Inf "
                                                                 r"at global step 10.*model.ckpt-5 .*stays the newest"):
        est.train(input_fn_for(X, Y), max_steps=20, hooks=[_Poison("stats/moving_mean", 7)])
    assert checkpoint_steps(model_dir) == [0, 5]
    assert np.all(np.isfinite(est.get_variable_value("stats/moving_mean")))
    assert est.get_variable_value("stats/best_loss") == np.inf


@pytest.fixture
def small_disk(tmp_path):
    """mount(size) -> a directory on a tmpfs of that size (root only), or None where mounting is not
    permitted (the tests then inject the write error as TensorFlow reports ENOSPC)."""
    import subprocess
    mounted = []

    def mount(size):
        path = tmp_path / f"disk{len(mounted)}"
        path.mkdir()
        try:
            ok = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                                       str(path)], capture_output=True).returncode == 0
        except OSError:
            ok = False
        if ok:
            mounted.append(path)
        return str(path) if ok else None
    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("trained") / "model")
    NPUEstimator(model_fn, model_dir=model_dir, config=_config(keep_checkpoint_max=1)).train(
        input_fn_for(X, Y, shuffle=True, seed=1), max_steps=10)
    return model_dir


def _no_space(path):
    return tf.errors.ResourceExhaustedError(None, None, f"{path}; No space left on device")


def test_an_export_on_a_full_disk_is_one_clear_error_and_leaves_no_partial_export(trained, small_disk, tmp_path,
                                                                                   monkeypatch):
    """Before: TensorFlow's ResourceExhaustedError (a long traceback), and the partial `temp-*`
    export stayed, keeping the disk full for training's next checkpoint."""
    disk = small_disk("160k")
    if disk is None:
        real_save = v1.saved_model.Builder.save
        calls = []

        def full_after_two(self, *args, **kwargs):
            calls.append(1)
            if len(calls) > 2:
                raise _no_space("saved_model.pb")
            return real_save(self, *args, **kwargs)
        monkeypatch.setattr(v1.saved_model.Builder, "save", full_after_two)
    base = os.path.join(disk or str(tmp_path), "export")
    est = NPUEstimator(model_fn, model_dir=trained, config=_config())
    exported = []
    with pytest.raises(checkpoints.DiskFullError) as error:
        for _ in range(100):
            exported.append(est.export_saved_model(base, _serving_fn()))
    message = str(error.value)
    assert f"Not enough space to export a SavedModel in {base}: about " in message, message
    assert "bytes free" in message and "The partial export was removed" in message and "\n" not in message
    assert exported and sorted(os.listdir(base)) == sorted(os.path.basename(p) for p in exported)  # no temp-*
    for path in exported:  # the earlier exports are whole
        assert tf.train.load_variable(os.path.join(path, "variables", "variables"), "global_step") == 10


def _fill(directory):
    """Write into `directory` until its file system has no room left."""
    fd = os.open(os.path.join(directory, "filler"), os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_evaluate_on_a_full_disk_returns_its_results_with_a_warning(trained, small_disk, caplog):
    """Before: the evaluation ran, then its event file could not be created: a RuntimeError, the
    results lost. Where no tmpfs can be mounted, `eval` is made a file so the writer fails alike."""
    import shutil
    disk = small_disk("128k")
    model_dir = os.path.join(disk or os.path.dirname(trained) + "-copy", "model")
    shutil.copytree(trained, model_dir, ignore=shutil.ignore_patterns("graph.pbtxt", "events.*", "eval*"))
    if disk is not None:
        _fill(disk)
    else:
        open(os.path.join(model_dir, "eval"), "w").close()
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    with caplog.at_level(logging.WARNING, logger="npurun"):
        results = est.evaluate(input_fn_for(X, Y, repeat=False))
    assert results["global_step"] == 10 and 0.0 < results["accuracy"] <= 1.0
    warned = [r.getMessage() for r in caplog.records if "Could not write the evaluation results" in r.getMessage()]
    assert len(warned) == 1 and os.path.join(model_dir, "eval") in warned[0], warned


@pytest.mark.parametrize("text", ["12345", "[1, 2]", '"pid 7"', "\x00\x01 not json"])
def test_a_lock_file_npurun_did_not_write_is_taken_over(tmp_path, text):
    """Before: a lock file holding JSON that is not an object (another tool's pid file) crashed
    train() with AttributeError: 'int' object has no attribute 'get'."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "npurun_train.lock").write_text(text)
    est = NPUEstimator(model_fn, model_dir=str(model_dir), config=_config())
    est.train(input_fn_for(X, Y), steps=5)
    assert checkpoint_steps(str(model_dir)) == [0, 5]


@pytest.fixture
def read_only_model_dir(trained, tmp_path):
    """A copy of `trained` that this process cannot write: a read-only bind mount as root, else
    permissions (which root ignores)."""
    import shutil
    import subprocess
    source = str(tmp_path / "source")
    shutil.copytree(trained, source)
    if os.geteuid() != 0:
        os.chmod(source, 0o555)
        yield source
        os.chmod(source, 0o755)
        return
    target = str(tmp_path / "read-only")
    os.mkdir(target)
    subprocess.run(["mount", "--bind", source, target], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", target], check=True)
    yield target
    subprocess.run(["umount", "-l", target], check=False)


def test_training_into_a_read_only_model_dir_names_the_directory(read_only_model_dir):
    """Before: `OSError: [Errno 30] Read-only file system: '.../npurun_train.lock'`."""
    est = NPUEstimator(model_fn, model_dir=read_only_model_dir, config=_config())
    assert est.get_variable_value("global_step") == 10  # reading works
    with pytest.raises(PermissionError, match=rf"model_dir {read_only_model_dir} is not writable \(.*\): training "
                                              rf"writes its lock file npurun_train.lock"):
        est.train(input_fn_for(X, Y), max_steps=20)


@pytest.mark.slow
def test_readers_keep_up_with_a_job_saving_every_step_and_keeping_one(tmp_path, caplog):
    """Before: with a checkpoint every step and keep_checkpoint_max=1, about 1 in 5 reads failed with
    "Could not find trained model" (every listed checkpoint was evicted within 5 listings, or the
    listing fell between a save and an eviction), with warnings about incomplete checkpoints."""
    from test_faults_processes import Child
    model_dir = str(tmp_path / "model")
    child = Child(tmp_path, model_dir, save_checkpoints_steps=1, keep_checkpoint_max=1)
    child.wait_for(r"Saving checkpoint for step 20\b")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    failures, steps = [], []
    with caplog.at_level(logging.WARNING, logger="npurun"):
        for _ in range(40):
            try:
                steps.append(int(est.get_variable_value("global_step")))
                assert est.latest_checkpoint() is not None
            except (ValueError, AssertionError) as error:
                failures.append(str(error))
    child.signal(signal.SIGTERM)
    assert child.finish() == 143
    assert failures == []
    assert steps == sorted(steps) and steps[-1] > steps[0]  # it kept saving underneath
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("failing", ["data", "state file"])
def test_a_full_disk_at_the_first_save_says_there_is_no_checkpoint_yet(tmp_path, monkeypatch, failing):
    """Before: "... about 68 bytes needed ... no checkpoint is complete and named in the state file,
    so training can resume from it": the variables' bytes without the input position (the file
    was about 25 KB), and a sentence saying the opposite of what it meant."""
    import errno
    if failing == "data":
        def no_room(self, sess, *args, **kwargs):
            raise _no_space("model.ckpt-0.data-00000-of-00001.tempstate1")
        monkeypatch.setattr(v1.train.Saver, "save", no_room)
    else:
        def no_room_for_state(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(checkpoints, "write_state_file", no_room_for_state)
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    with pytest.raises(checkpoints.DiskFullError) as error:
        est.train(input_fn_for(X, Y, shuffle=True, seed=1), steps=10)
    message = str(error.value)
    assert "No checkpoint is complete yet, so training would start from its beginning" in message, message
    assert "training can resume" not in message
    needed = int(re.search(r"about (\d+) bytes needed", message).group(1))
    if failing == "state file":  # the checkpoint's files were written: their size
        assert needed == sum(os.path.getsize(p) for p in glob.glob(os.path.join(model_dir, "model.ckpt-0.*")))
    else:  # nothing written: the variables' bytes (3 x 4 + 3 weights and biases, the global step)
        assert needed == (4 * 3 + 3) * 4 + 8


def test_a_crash_resume_with_a_changed_input_fn_reads_the_input_from_its_start(tmp_path, caplog):
    """Before: after a crash (no finished mark), a restart whose input_fn no longer shuffles
    restored the old pipeline's position, the input ended at once, and train() returned having
    trained nothing ("Input ended at global step 20", at INFO level)."""
    model_dir = str(tmp_path / "model")
    NPUEstimator(model_fn, model_dir=model_dir, config=_config()).train(input_fn_for(X, Y, shuffle=True, seed=1),
                                                                        max_steps=20)
    os.remove(os.path.join(model_dir, checkpoints.FINISHED_FILE))  # as when the process was killed
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est.train(input_fn_for(X, Y), max_steps=40)
    assert est.get_variable_value("global_step") == 40
    warned = [r.getMessage() for r in caplog.records if "ended the input before the first step" in r.getMessage()]
    assert len(warned) == 1 and "model.ckpt-20" in warned[0]


@pytest.mark.parametrize("damage", [b"", b"\x00\xff garbage", "truncate"])
def test_a_damaged_state_file_is_one_warning_and_every_reader_lists_the_directory(trained, tmp_path, caplog, damage):
    """Before: each reader call logged TensorFlow's two lines ("ParseError ...", "Checkpoint ignored")
    or npurun's warning again: 14 times for latest_checkpoint, get_variable_value and evaluate."""
    import shutil
    model_dir = str(tmp_path / "model")
    shutil.copytree(trained, model_dir)
    state = os.path.join(model_dir, "checkpoint")
    text = open(state, "rb").read()
    open(state, "wb").write(text[:len(text) // 2] if damage == "truncate" else damage)
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    with caplog.at_level(logging.WARNING):
        assert est.latest_checkpoint() == os.path.join(model_dir, "model.ckpt-10")
        assert est.get_variable_value("global_step") == 10
        assert est.evaluate(input_fn_for(X, Y, repeat=False))["global_step"] == 10
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and warned[0].startswith(f"Ignoring the damaged checkpoint state file {state} ("), warned
