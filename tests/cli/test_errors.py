"""One-paragraph errors from the `npurun` command: user errors get a message and an exit status,
bugs keep their traceback, --debug / NPURUN_DEBUG=1 shows the traceback of user errors too."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from npurun import cli
from npurun.cli import main
from npurun.reporting import classify
from npurun.config.errors import OptionTypeError

NPURUN = [sys.executable, "-m", "npurun.cli"]


def env_without_debug(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NPURUN_DEBUG", "NPURUN_VERBOSE")}
    env.update(extra)
    return env


def test_no_command_exits_2_with_the_help(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: npurun" in err and "COMMAND is required" in err


def test_steps_must_be_a_positive_int_and_its_help_says_it_is_a_total(capsys):
    for bad in ("0", "-3", "ten"):
        with pytest.raises(SystemExit) as exit_:
            main(["train", "--steps", bad])
        assert exit_.value.code == 2
        assert "--steps" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "the global step to train to, a total" in help_text


@pytest.mark.slow
def test_model_dir_that_is_a_file_is_one_paragraph_and_exit_2(tmp_path):
    # the CLI's --model-dir check rejects it before anything runs: a usage error naming the flag
    (tmp_path / "afile").write_text("not a directory")
    done = subprocess.run([*NPURUN, "train", "--steps", "2", "--model-dir", "afile"], capture_output=True, text=True,
                          cwd=tmp_path, env=env_without_debug(), timeout=300)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("npurun train:")]
    assert "--model-dir" in line and "'afile'" in line and "is not a directory" in line
    debug = subprocess.run([*NPURUN, "train", "--steps", "2", "--model-dir", "afile"], capture_output=True,
                           text=True, cwd=tmp_path, env=env_without_debug(NPURUN_DEBUG="1"), timeout=300)
    # an argument error is a usage error even with NPURUN_DEBUG=1: nothing ran, there is no traceback to show
    assert debug.returncode == 2 and "argument --model-dir: got 'afile'" in debug.stderr


@pytest.mark.slow
def test_model_dir_under_a_file_and_conflicting_options_are_user_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    assert main(["train", "--steps", "2", "--model-dir", "afile/model"]) == 1  # TensorFlow's file system says so
    err = capsys.readouterr().err
    assert "Traceback" not in err and "afile is not a directory" in err and "--debug" in err
    # NPURUN_DEBUG=1 (what --debug sets) shows the traceback of that user error
    monkeypatch.setenv("NPURUN_DEBUG", "1")
    assert main(["train", "--steps", "2", "--model-dir", "afile/model"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    monkeypatch.delenv("NPURUN_DEBUG")
    # the config's model_dir and --model-dir differ
    assert main(["train", "--steps", "2", "--model-dir", "a", "--set", "model_dir=b"]) == 2
    err = capsys.readouterr().err
    assert "npurun train:" in err and "model_dir" in err and "Traceback" not in err
    # steps that iterations_per_loop does not divide
    assert main(["train", "--steps", "4", "--model-dir", "c", "--set", "iterations_per_loop=3"]) == 2
    err = capsys.readouterr().err
    assert "iterations_per_loop=3" in err and "Traceback" not in err


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_explain", interrupted)
    assert main(["explain"]) == 130
    assert capsys.readouterr().err.strip() == "npurun explain: interrupted"


def test_a_bug_in_npurun_keeps_its_traceback(monkeypatch):
    def buggy(args):
        return {}["missing"]

    monkeypatch.setattr(cli, "cmd_explain", buggy)
    with pytest.raises(KeyError):
        main(["explain"])


def test_npurun_errors_about_the_run_itself_are_failed_runs_without_a_traceback(monkeypatch, capsys):
    # Before: a RuntimeError (a model_dir whose checkpoints are all damaged, one another job trains
    # in, a full disk, a lost peer, a port in use) printed `npurun train`'s raw traceback.
    from npurun.distribute import errors as distribute_errors
    from npurun.estimator import checkpoints, loop, model_dir_lock

    for error in (checkpoints.CheckpointRestoreError("None of the checkpoints in /m restores"),
                  checkpoints.DiskFullError("Not enough space"), checkpoints.NonFiniteVariableError("NaN"),
                  model_dir_lock.ModelDirInUseError("held by pid 1"), loop.NanLossDuringTrainingError(),
                  loop.GlobalStepStalledError("stalled"), distribute_errors.StartupTimeoutError("rank 1 missing"),
                  distribute_errors.CollectiveTimeoutError("peer lost"),
                  distribute_errors.ServerStartError("port in use")):
        status, message = classify(error)
        assert status == 1 and message.startswith(type(error).__name__), message

    def damaged(args):
        raise checkpoints.CheckpointRestoreError("None of the checkpoints in /m restores")

    monkeypatch.setattr(cli, "cmd_explain", damaged)
    assert main(["explain"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "None of the checkpoints in /m restores" in err


def test_unwritable_and_missing_paths_are_failed_runs_with_a_hint():
    # (the suite may run as root, for whom no directory is unwritable: the error itself is classified)
    status, message = classify(PermissionError(13, "Permission denied", "/data/model"))
    assert status == 1 and "PermissionError" in message and "/data/model" in message and "writable" in message
    status, message = classify(NotADirectoryError(20, "Not a directory", "afile/model"))
    assert status == 1 and "afile/model" in message


def test_only_npurun_raised_value_errors_are_user_errors():
    def raise_here():
        raise ValueError("from the test, not npurun")

    with pytest.raises(ValueError) as info:
        raise_here()
    assert classify(info.value) is None  # raised outside npurun: a bug, traceback kept
    with pytest.raises(OptionTypeError) as info:
        from npurun import NPURunConfig
        NPURunConfig(dump_config="x")
    assert classify(info.value)[0] == 2


SCRIPT_RAISES = textwrap.dedent("""\
    def load(path):
        raise FileNotFoundError(2, "no such data file", path)

    def main():
        load("/data/train.tfrecord")

    main()
    """)


def test_a_scripts_exception_under_run_shows_the_scripts_frames_then_one_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT_RAISES)
    done = subprocess.run([*NPURUN, "run", str(script)], capture_output=True, text=True, env=env_without_debug(),
                          timeout=300)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    frames = [line for line in lines if line.startswith('  File "')]
    assert [f.split(", in ")[1] for f in frames] == ["<module>", "main", "load"]
    assert all(str(script) in f for f in frames)  # no npurun / runpy frames
    assert "FileNotFoundError: [Errno 2] no such data file: '/data/train.tfrecord'" in lines
    assert lines[-1].startswith("npurun run: train.py raised FileNotFoundError")
    debug = subprocess.run([*NPURUN, "--debug", "run", str(script)], capture_output=True, text=True,
                           env=env_without_debug(), timeout=300)
    assert debug.returncode == 1 and "runpy" in debug.stderr  # the whole traceback


def test_ctrl_c_during_run_exits_130_without_a_traceback(tmp_path):
    script = tmp_path / "sleeps.py"
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([*NPURUN, "run", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_without_debug())
    assert proc.stdout.readline().strip() == "started"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err and "npurun run: interrupted" in err


def test_the_bundled_digits_are_scikit_learns_digits():
    from sklearn.datasets import load_digits as sklearn_digits

    from npurun.example.digits import _digits

    pixels, labels = _digits()
    reference = sklearn_digits()
    assert np.array_equal(pixels, reference.data) and np.array_equal(labels, reference.target)


@pytest.mark.slow
def test_train_runs_without_scikit_learn(tmp_path):
    # A `sklearn` that cannot be imported, first on the path: as on a machine without scikit-learn.
    (tmp_path / "sklearn").mkdir()
    (tmp_path / "sklearn" / "__init__.py").write_text("raise ImportError('no scikit-learn here')\n")
    env = env_without_debug(PYTHONPATH=str(tmp_path))
    done = subprocess.run([*NPURUN, "train", "--steps", "20", "--model-dir", str(tmp_path / "m")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split("accuracy: ")[1].split()[0]) > 0.3
