"""Fault injection on checkpoint files, in process: truncated, bit-flipped and deleted files, a
state file naming a missing checkpoint, every checkpoint damaged, vanishing files during
eviction, failed saves (no silent downgrade to variables only), NaN/Inf weights, a stuck global
step, an empty evaluation input. One trained model_dir is shared (copied per test)."""
import glob
import logging
import os
import re
import shutil
import warnings

import numpy as np
import pytest
import tensorflow as tf

import npurun
from estimator_helpers import checkpoint_steps, input_fn_for, make_data, model_fn
from npurun.estimator import NPUEstimator, checkpoints, export as export_lib, loop
from npurun import reporting

v1 = tf.compat.v1
X, Y = make_data()
SAVE_EVERY = 5
STEPS = 20


def _config(**options):
    options.setdefault("log_step_count_steps", None)
    options.setdefault("save_checkpoints_steps", SAVE_EVERY)
    options.setdefault("keep_checkpoint_max", 0)
    options.setdefault("tf_random_seed", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return npurun.NPURunConfig(**options)


def _input():
    return input_fn_for(X, Y, shuffle=True, seed=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model_dir with checkpoints at steps 0 (training's start), 5, 10, 15, 20 (each with the input
    position), and the weights of each."""
    model_dir = str(tmp_path_factory.mktemp("trained") / "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    est.train(_input(), max_steps=STEPS)
    weights = {step: tf.train.load_variable(os.path.join(model_dir, f"model.ckpt-{step}"), "linear/w")
               for step in checkpoint_steps(model_dir)}
    return model_dir, weights


@pytest.fixture
def copy(trained, tmp_path):
    model_dir = str(tmp_path / "model")
    shutil.copytree(trained[0], model_dir)
    os.remove(os.path.join(model_dir, checkpoints.FINISHED_FILE))  # as after a crash: resume the input too
    return model_dir


def _data(model_dir, step):
    return glob.glob(os.path.join(model_dir, f"model.ckpt-{step}.data-*"))[0]


def _flip(path, offset):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x10]))


def _warnings_about(caplog, text):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and text in r.getMessage()]


def _serving_fn():
    return export_lib.build_raw_serving_input_receiver_fn({"x": tf.TensorSpec([None, 4], tf.float32)})


@pytest.mark.parametrize("damage", ["truncate", "bitflip-variables"])
def test_every_reader_falls_back_from_a_damaged_newest_checkpoint(copy, trained, damage, caplog, tmp_path):
    data = _data(copy, 20)
    if damage == "truncate":
        with open(data, "r+b") as handle:
            handle.truncate(os.path.getsize(data) // 2)
    else:
        _flip(data, os.path.getsize(data) - 20)  # the variables follow the (larger) input position
    est = NPUEstimator(model_fn, model_dir=copy, config=_config())
    with caplog.at_level(logging.WARNING, logger="npurun"):
        assert est.latest_checkpoint().endswith("model.ckpt-15")
        np.testing.assert_array_equal(est.get_variable_value("linear/w"), trained[1][15])
        assert "linear/w" in est.get_variable_names()
        assert est.evaluate(input_fn_for(X, Y, repeat=False))["global_step"] == 15
        assert len(list(est.predict(input_fn_for(X, repeat=False)))) == len(X)
        exported = est.export_saved_model(str(tmp_path / "export"), _serving_fn())
        warm = NPUEstimator(model_fn, model_dir=str(tmp_path / "warm"), config=_config(), warm_start_from=copy)
        warm.train(_input(), steps=1)
    np.testing.assert_array_equal(tf.train.load_variable(os.path.join(exported, "variables", "variables"),
                                                         "linear/w"), trained[1][15])
    # warm start took step 15's weights, then one step: they differ from 15's by one update only
    assert not np.array_equal(warm.get_variable_value("linear/w"), trained[1][15])
    named = _warnings_about(caplog, "model.ckpt-20")
    assert named and all("damaged" in m or "does not restore" in m for m in named)
    assert any(("Checksum" in m or "truncat" in m.lower() or "Read less bytes" in m or "data" in m.lower())
               for m in named)
    # Nothing renamed or deleted: the damage may be transient.
    assert os.path.getsize(data) > 0 and not glob.glob(os.path.join(copy, "*.unreadable"))


@pytest.mark.parametrize("missing", [".index", ".data"])
def test_a_deleted_index_or_data_file_falls_back_with_a_warning(copy, trained, missing, caplog):
    victim = os.path.join(copy, "model.ckpt-20.index") if missing == ".index" else _data(copy, 20)
    os.remove(victim)
    old = os.path.getmtime(os.path.join(copy, "model.ckpt-15.index"))
    for name in glob.glob(os.path.join(copy, "model.ckpt-20*")):  # not a save in progress
        os.utime(name, (old - 3600, old - 3600))
    est = NPUEstimator(model_fn, model_dir=copy, config=_config())
    with caplog.at_level(logging.WARNING, logger="npurun"):
        np.testing.assert_array_equal(est.get_variable_value("linear/w"), trained[1][15])
    assert any(f"{missing} file is missing" in m or "files are missing" in m
               for m in _warnings_about(caplog, "model.ckpt-20"))


def test_a_bit_flip_in_the_input_position_falls_back_to_the_previous_checkpoint_exactly(copy, trained, caplog):
    """Resuming step 20's variables without its input position would not be exact; resuming from
    step 15 with its position is, and reproduces step 20's weights bit for bit."""
    data = _data(copy, 20)
    _flip(data, os.path.getsize(data) // 2)  # inside the input position (most of the file)
    assert tf.train.load_checkpoint(os.path.join(copy, "model.ckpt-20")).get_tensor("linear/w") is not None
    est = NPUEstimator(model_fn, model_dir=copy, config=_config())
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est.train(_input(), max_steps=STEPS)
    assert any("does not restore" in m and "checksum" in m.lower() for m in _warnings_about(caplog, "model.ckpt-20"))
    np.testing.assert_array_equal(est.get_variable_value("linear/w"), trained[1][20])
    assert est.get_variable_value("global_step") == 20


def test_every_checkpoint_damaged_is_an_error_and_nothing_is_renamed(copy):
    for step in checkpoint_steps(copy):
        with open(_data(copy, step), "r+b") as handle:
            handle.truncate(4)
    before = sorted(os.listdir(copy))
    est = NPUEstimator(model_fn, model_dir=copy, config=_config())
    with pytest.raises(checkpoints.CheckpointRestoreError,
                       match="None of the checkpoints.*model.ckpt-20.*model.ckpt-5") as error:
        est.train(_input(), steps=1)
    # The user's model_dir, not a bug: the CLI (`npurun train`) says it in one paragraph, status 1, no traceback.
    assert reporting.classify(error.value) == (1, f"CheckpointRestoreError: {error.value}")
    with pytest.raises(ValueError, match="Could not find trained model in model_dir.*no checkpoint"):
        est.get_variable_value("linear/w")
    assert set(os.listdir(copy)) == set(before) | {"npurun_train.lock"}


def test_state_file_names_only_complete_checkpoints_and_eviction_tolerates_vanished_files(tmp_path):
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config(keep_checkpoint_max=2))
    est.train(_input(), steps=10)
    # Another process (or an operator) removed the checkpoint eviction is about to delete.
    for name in glob.glob(os.path.join(model_dir, "model.ckpt-5.*")):
        os.remove(name)
    est.train(_input(), steps=5)
    assert checkpoint_steps(model_dir) == [10, 15]
    state = tf.train.get_checkpoint_state(model_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["model.ckpt-10", "model.ckpt-15"]
    for path in state.all_model_checkpoint_paths:
        assert checkpoints.is_readable(path)
    assert not glob.glob(os.path.join(model_dir, "checkpoint.tmp*"))


def test_a_failed_save_is_an_error_not_a_downgrade_to_variables_only(tmp_path, monkeypatch):
    """A save with the input position failing once (e.g. a nearly full disk) stops training with
    an error; it never continues with checkpoints that cannot resume exactly."""
    model_dir = str(tmp_path / "model")
    real_save = v1.train.Saver.save
    calls = []

    def flaky_save(self, sess, *args, **kwargs):
        calls.append(self)
        if len(calls) == 3:  # steps 0 and 5 saved
            raise tf.errors.UnknownError(None, None, "injected: write failed")
        return real_save(self, sess, *args, **kwargs)
    monkeypatch.setattr(v1.train.Saver, "save", flaky_save)
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config())
    with pytest.raises(checkpoints.CheckpointSaveError, match=r"model.ckpt-10.*injected.*model.ckpt-5"):
        est.train(_input(), steps=20)
    assert checkpoint_steps(model_dir) == [0, 5]
    assert "IteratorV2:0_STATE" in tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-5")) \
        .get_variable_to_dtype_map()
    assert not glob.glob(os.path.join(model_dir, "*tempstate*"))


def test_an_input_that_cannot_be_saved_is_decided_once_with_a_warning(tmp_path, caplog):
    def generator_input():
        def gen():
            for i in range(len(X)):
                yield {"x": X[i]}, Y[i]
        spec = ({"x": tf.TensorSpec([4], tf.float32)}, tf.TensorSpec([], tf.int32))
        return tf.data.Dataset.from_generator(gen, output_signature=spec).repeat().batch(8)
    est = NPUEstimator(model_fn, model_dir=str(tmp_path / "model"), config=_config())
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est.train(generator_input, steps=12)
    assert len(_warnings_about(caplog, "will not hold the input pipeline's position")) == 1
    assert checkpoint_steps(est.model_dir) == [0, 5, 10, 12]


def _nan_after(step_limit):
    def model(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        if mode != "train":
            return spec
        drift = v1.get_variable("drift", [2], initializer=v1.zeros_initializer())
        step = v1.train.get_global_step()
        poison = tf.cond(step >= step_limit, lambda: tf.constant([np.nan, 0.0]), lambda: tf.zeros([2]))
        with tf.control_dependencies([spec.train_op]):
            train_op = v1.assign(drift, poison)
        return spec._replace(train_op=tf.group(train_op))
    return model


def test_nan_weights_never_replace_the_last_good_checkpoint(tmp_path):
    model_dir = str(tmp_path / "model")
    est = NPUEstimator(_nan_after(7), model_dir=model_dir, config=_config())
    with pytest.raises(checkpoints.NonFiniteVariableError, match=r"drift.*global step 10.*model.ckpt-5"):
        est.train(_input(), steps=20)
    assert checkpoint_steps(model_dir) == [0, 5]
    assert os.path.basename(tf.train.latest_checkpoint(model_dir)) == "model.ckpt-5"


def _no_global_step(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode != "train":
        return spec
    optimizer = v1.train.GradientDescentOptimizer(0.1)
    return type(spec)(mode, loss=spec.loss, train_op=optimizer.minimize(spec.loss))


@pytest.mark.parametrize("iterations", [1, 4])
def test_a_train_op_that_never_advances_the_global_step_is_an_error(tmp_path, iterations):
    est = NPUEstimator(_no_global_step, model_dir=str(tmp_path / "model"),
                       config=_config(iterations_per_loop=iterations, save_checkpoints_steps=0))
    with pytest.raises(loop.GlobalStepStalledError, match=r"stayed at 0 for 100 .*global_step=tf.compat.v1"):
        est.train(_input(), steps=400)


def test_loss_scale_overflow_skips_are_counted_apart(tmp_path, monkeypatch, caplog):
    """An overflowing step does not advance the global step; those runs never count as stuck, and
    the first one is reported as an overflow skip, not as a train_op that forgot the global step."""
    from npurun.precision import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer
    monkeypatch.setattr(loop, "STALL_LIMIT", 3)

    def scaled(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        if mode != "train":
            return spec
        manager = ExponentialUpdateLossScaleManager(init_loss_scale=2.0 ** 127, incr_every_n_steps=1000,
                                                    decr_every_n_nan_or_inf=1, decr_ratio=0.5)
        # A loss of ~1e30 (learning rate 1e-31): its scaled gradients overflow float32 until the
        # scale has halved about 100 times.
        optimizer = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(1e-31), manager)
        return type(spec)(mode, loss=spec.loss,
                          train_op=optimizer.minimize(spec.loss * 1e30, global_step=v1.train.get_global_step()))
    est = NPUEstimator(scaled, model_dir=str(tmp_path / "model"), config=_config(save_checkpoints_steps=100))
    with caplog.at_level(logging.INFO, logger="npurun"):
        est.train(_input(), steps=5)  # the first runs overflow (a scale of 2**127) until it is small enough
    assert est.get_variable_value("global_step") == 5
    assert est.get_variable_value("loss_scale_manager/skipped_steps") > 3
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "did not advance" in m], messages  # before: the wrong advice
    assert any("skipped its update: the loss scale overflowed" in m for m in messages), messages


def test_evaluating_an_empty_input_is_an_error(trained):
    est = NPUEstimator(model_fn, model_dir=trained[0], config=_config())

    def empty():
        return input_fn_for(X, Y, repeat=False)().filter(lambda features, labels: False)
    with pytest.raises(ValueError, match="evaluation input is empty"):
        est.evaluate(empty)


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (root only; graph.pbtxt takes 94 KB of it); None where mounting is not permitted."""
    import subprocess
    path = tmp_path / "disk"
    path.mkdir()
    try:
        mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(path)],
                                                       capture_output=True).returncode == 0
    except OSError:  # no mount command
        mounted = False
    yield str(path) if mounted else None
    if mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_is_one_clear_error_and_the_newest_complete_checkpoint_stays_named(small_disk, tmp_path,
                                                                                        monkeypatch):
    """On a real small file system when it can be mounted; otherwise the write error is injected
    as TensorFlow reports ENOSPC (ResourceExhaustedError "No space left on device")."""
    if small_disk is None:
        real_save = v1.train.Saver.save
        saves = []

        def full_after_three(self, sess, *args, **kwargs):
            saves.append(1)
            if len(saves) > 3:
                raise tf.errors.ResourceExhaustedError(None, None, "model.ckpt-20.data-00000-of-00001.tempstate1; "
                                                                   "No space left on device")
            return real_save(self, sess, *args, **kwargs)
        monkeypatch.setattr(v1.train.Saver, "save", full_after_three)
    model_dir = os.path.join(small_disk or str(tmp_path), "model")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=_config(save_summary_steps=0))
    with pytest.raises(checkpoints.DiskFullError) as error:
        est.train(_input(), steps=200)
    message = str(error.value)
    failed = re.search(rf"Not enough space to save model.ckpt-(\d+) in {re.escape(model_dir)}: "
                       rf"about [1-9]\d* bytes needed, \d+ bytes free", message)
    assert failed, message
    named = int(failed.group(1)) - SAVE_EVERY  # the save that failed may be the data or the state file
    assert f"model.ckpt-{named} (in {model_dir}) is complete and named in the state file" in message
    assert "keep_checkpoint_max=N needs room for N+1" in message and "\n" not in message
    state = tf.train.get_checkpoint_state(model_dir)
    assert os.path.basename(state.model_checkpoint_path) == f"model.ckpt-{named}"
    for path in state.all_model_checkpoint_paths:
        assert checkpoints.is_readable(path)
    assert not glob.glob(os.path.join(model_dir, "*tempstate*")) and not glob.glob(os.path.join(model_dir, "*.tmp*"))
    # Once there is room again, training resumes from that checkpoint.
    monkeypatch.undo()
    newest = checkpoint_steps(model_dir)[-1]
    for step in checkpoint_steps(model_dir)[:-1]:
        for name in glob.glob(os.path.join(model_dir, f"model.ckpt-{step}.*")):
            os.remove(name)
    os.remove(os.path.join(model_dir, "graph.pbtxt"))  # rewritten by train(): it would need twice its size
    resumed = NPUEstimator(model_fn, model_dir=model_dir, config=_config(save_summary_steps=0,
                                                                         keep_checkpoint_max=1))
    resumed.train(_input(), steps=SAVE_EVERY)
    assert resumed.get_variable_value("global_step") == newest + SAVE_EVERY


def test_a_full_disk_when_the_event_file_starts_is_a_disk_full_error(tmp_path, monkeypatch):
    # Before: TensorFlow's RuntimeError ("<file>; No space left on device") from FileWriter went up
    # as a bug, with `npurun train`'s raw traceback.
    from npurun.estimator import building

    def full(*args, **kwargs):
        raise RuntimeError(f"{tmp_path}/events.out.tfevents.1; No space left on device")

    monkeypatch.setattr(building._v1.summary, "FileWriter", full)
    with pytest.raises(checkpoints.DiskFullError, match="Not enough space to start the event file") as error:
        building.summary_writer(str(tmp_path))
    assert reporting.classify(error.value)[0] == 1
