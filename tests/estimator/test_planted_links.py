"""Files npurun writes never follow a link it did not make (issue 27).

Each test plants a symbolic link where npurun writes (the model_dir lock, kernel_cache, kernel_meta,
dump files, side files of checkpoints and profiling) pointing at a "victim" the link's maker wants
destroyed: the victim must be untouched, and the error must name the link.
"""
import json
import os
import re
import stat
import subprocess
import sys
import warnings

import pytest

from npurun import safe_files
from npurun.estimator import checkpoints, model_dir_lock

VICTIM_TEXT = "precious, not npurun's\n"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text(VICTIM_TEXT)
    return path


def names_link(error, link) -> bool:
    return str(link) in str(error) and "symbolic link" in str(error)


# --------------------------------------------------------------------------- the model_dir lock

def test_a_lock_link_is_refused_and_its_target_kept(tmp_path, victim):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    link = model_dir / model_dir_lock.LOCK_FILE
    link.symlink_to(victim)
    with pytest.raises(safe_files.PlantedLinkError) as error:
        with model_dir_lock.hold(str(model_dir)):
            pass
    assert names_link(error.value, link)
    assert victim.read_text() == VICTIM_TEXT
    assert link.is_symlink()  # not replaced either: the user sees what was planted


def test_training_into_a_model_dir_with_a_planted_lock_link_writes_nothing_through_it(tmp_path, victim, make_config):
    import numpy as np
    import tensorflow as tf

    from npurun import EstimatorSpec, NPUEstimator

    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(tf.square(tf.compat.v1.get_variable("w", [1]) * features - labels))
        step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return EstimatorSpec(mode, loss=loss, train_op=step)

    def input_fn():
        x = np.ones([4, 1], np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x)).repeat().batch(2)

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / model_dir_lock.LOCK_FILE).symlink_to(victim)
    estimator = NPUEstimator(model_fn, config=make_config(model_dir=str(model_dir)))
    with pytest.raises(safe_files.PlantedLinkError, match=re.escape(str(model_dir / model_dir_lock.LOCK_FILE))):
        estimator.train(input_fn, max_steps=1)
    assert victim.read_text() == VICTIM_TEXT


def test_the_lock_file_is_owner_only_and_an_older_wider_one_is_narrowed(tmp_path):
    model_dir = tmp_path / "model"
    with model_dir_lock.hold(str(model_dir)):
        assert stat.S_IMODE(os.stat(model_dir / model_dir_lock.LOCK_FILE).st_mode) == 0o600
    os.chmod(model_dir / model_dir_lock.LOCK_FILE, 0o644)  # as npurun made it before
    with model_dir_lock.hold(str(model_dir)):
        assert stat.S_IMODE(os.stat(model_dir / model_dir_lock.LOCK_FILE).st_mode) == 0o600


@pytest.fixture
def shared_dir():
    """A folder another user can reach (pytest's tmp_path sits under an owner-only folder)."""
    import pathlib
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="npurun-shared-")
    os.chmod(path, 0o755)
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


HOLD_READ_ONLY = """\
import fcntl, os, sys, time
os.setgid(65534); os.setuid(65534)  # nobody
handle = open(sys.argv[1], "r")  # read-only: all a 0644 file lets another user do
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_lock_held_by_another_users_read_only_descriptor_is_reported_as_such(shared_dir):
    model_dir = shared_dir / "model"
    model_dir.mkdir()
    lock = model_dir / model_dir_lock.LOCK_FILE
    lock.write_text("")
    os.chmod(lock, 0o644)  # as an older npurun left it: readable by every user
    child = subprocess.Popen([sys.executable, "-c", HOLD_READ_ONLY, str(lock)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(model_dir_lock.ModelDirInUseError) as error:
            with model_dir_lock.hold(str(model_dir)):
                pass
        message = str(error.value)
        assert "pid ?" not in message and "host ?" not in message
        assert f"pid {child.pid} (user nobody)" in message and "not an npurun training job" in message, message
        assert str(lock) in message
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    # Narrowed to 0600 by the attempt: that user can no longer open it at all.
    assert stat.S_IMODE(os.stat(lock).st_mode) == 0o600
    blocked = subprocess.run([sys.executable, "-c", HOLD_READ_ONLY, str(lock)], input="", capture_output=True,
                             text=True, timeout=60)
    assert blocked.returncode != 0 and "PermissionError" in blocked.stderr
    with model_dir_lock.hold(str(model_dir)):
        pass


def test_a_holder_the_system_does_not_show_is_said_to_be_unreadable(tmp_path, monkeypatch):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    lock = model_dir / model_dir_lock.LOCK_FILE
    lock.write_text("")
    child = subprocess.Popen([sys.executable, "-c", "import fcntl, sys\nh = open(sys.argv[1])\n"
                              "fcntl.flock(h, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()", str(lock)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    monkeypatch.setattr(model_dir_lock, "_lock_holders", lambda fd: [])  # e.g. /proc/locks of another namespace
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(model_dir_lock.ModelDirInUseError,
                           match="held by another user's process or another tool, which wrote no holder record; "
                                 "cannot read its owner") as error:
            with model_dir_lock.hold(str(model_dir)):
                pass
        assert "pid ?" not in str(error.value)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


# --------------------------------------------------------------------------- kernel_cache

def _cache_plan(tmp_path, mode):
    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.runtime.plan import SessionPlan

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = NPURunConfig(jit_compile="true", op_compiler_cache_mode=mode,
                               op_compiler_cache_dir=str(tmp_path / "cache")).options
    return options, SessionPlan(tf.compat.v1.ConfigProto())


@pytest.mark.parametrize("mode", ["force", "enable"])
def test_a_kernel_cache_link_is_refused_and_its_target_kept(tmp_path, mode):
    from npurun.runtime import compile_cache

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text(VICTIM_TEXT)
    (precious / "data").mkdir()
    (precious / "data" / "run1.csv").write_text(VICTIM_TEXT)
    (tmp_path / "cache").mkdir()
    link = tmp_path / "cache" / "kernel_cache"
    link.symlink_to(precious)
    options, plan = _cache_plan(tmp_path, mode)
    with pytest.raises(safe_files.PlantedLinkError) as error:
        compile_cache.contribute(options, "train", plan)
    assert names_link(error.value, link)
    assert sorted(os.listdir(precious)) == ["data", "thesis.tex"]
    assert (precious / "data" / "run1.csv").read_text() == VICTIM_TEXT
    assert "TF_XLA_FLAGS" not in plan.env  # no cache through the link either


def test_force_removes_a_link_inside_kernel_cache_but_not_its_target(tmp_path):
    from npurun.runtime import compile_cache

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text(VICTIM_TEXT)
    folder = tmp_path / "kernel_cache"
    folder.mkdir()
    (folder / "stale.pb").write_text("old entry")
    (folder / "linked_dir").symlink_to(precious)
    (folder / "linked_file").symlink_to(precious / "thesis.tex")
    compile_cache.empty_folder(str(folder))
    assert os.listdir(folder) == []
    assert (precious / "thesis.tex").read_text() == VICTIM_TEXT


# --------------------------------------------------------------------------- kernel_meta

def test_a_kernel_meta_file_link_is_refused_and_its_target_kept(tmp_path, victim):
    import tensorflow as tf

    from npurun.runtime import debug_artifacts

    folder = tmp_path / "kernel_meta"
    folder.mkdir()
    link = folder / "train_graph.pbtxt"
    link.symlink_to(victim)
    graph = tf.Graph()
    with graph.as_default():
        tf.constant(1.0, name="c")
    with pytest.raises(safe_files.PlantedLinkError) as error:
        debug_artifacts.graph_dumper(str(folder), 1)(graph, "train")
    assert names_link(error.value, link)
    assert victim.read_text() == VICTIM_TEXT


def test_a_kernel_meta_folder_link_is_refused(tmp_path):
    import tensorflow as tf

    from npurun import NPURunConfig
    from npurun.runtime import debug_artifacts
    from npurun.runtime.plan import SessionPlan

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "kernel_meta"
    link.symlink_to(elsewhere)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = NPURunConfig(op_debug_level=3, debug_dir=str(tmp_path)).options
    with pytest.raises(safe_files.PlantedLinkError) as error:
        debug_artifacts.contribute(options, "train", SessionPlan(tf.compat.v1.ConfigProto()))
    assert names_link(error.value, link)
    assert os.listdir(elsewhere) == []


# --------------------------------------------------------------------------- dumps, traces, exception dumps

def test_dump_files_are_never_written_through_links(tmp_path, victim):
    from npurun.debug.dump_files import INDEX_NAME, DumpWriter

    def write(folder):
        writer = DumpWriter(root=str(folder), prefix="train", path=str(folder))
        try:
            writer.write(kind="tensor", step=1, op="dense/MatMul", op_type="MatMul", io="output", slot=0,
                         tensor="dense/MatMul:0", value=[1.0, 2.0])
        finally:
            writer.close()

    planted = {
        "index": lambda d: (d / INDEX_NAME).symlink_to(victim),
        "tensor file": lambda d: (d / "step_1" / "dense").mkdir(parents=True)
        or (d / "step_1" / "dense" / "MatMul.output.0.npy").symlink_to(victim),
        "step folder": lambda d: (d / "step_1").symlink_to(victim.parent),
    }
    for name, plant in planted.items():
        folder = tmp_path / name.replace(" ", "_")
        folder.mkdir()
        plant(folder)
        with pytest.raises(safe_files.PlantedLinkError, match="symbolic link") as error:
            write(folder)
        assert str(folder) in str(error.value), name
        assert victim.read_text() == VICTIM_TEXT, name
    assert sorted(os.listdir(victim.parent)) == sorted(["victim.txt"] + [n.replace(" ", "_") for n in planted])


def test_a_dump_still_writes_where_nothing_is_planted(tmp_path):
    import numpy as np

    from npurun.debug.dump_files import DumpWriter, open_dump

    writer = DumpWriter(root=str(tmp_path), prefix="train")
    writer.write(kind="tensor", step=1, op="dense/MatMul", op_type="MatMul", io="output", slot=0,
                 tensor="dense/MatMul:0", value=[1.0, 2.0])
    writer.close()
    dump = open_dump(writer.path)
    assert np.array_equal(dump.load(dump.records[0]), [1.0, 2.0])
    assert not [n for n in os.listdir(os.path.join(writer.path, "step_1", "dense")) if ".tmp" in n]


def test_task_traces_and_training_traces_are_never_written_through_links(tmp_path, victim):
    from npurun.debug.chrome_trace import write_chrome_trace

    link = tmp_path / "step_1.json"
    link.symlink_to(victim)
    with pytest.raises(safe_files.PlantedLinkError) as error:
        write_chrome_trace(str(link), {"traceEvents": []})
    assert names_link(error.value, link)
    csv_link = tmp_path / "training_trace.csv"
    csv_link.symlink_to(victim)
    with pytest.raises(safe_files.PlantedLinkError) as error:
        safe_files.open_append(str(csv_link), "training trace file")
    assert names_link(error.value, csv_link)
    assert victim.read_text() == VICTIM_TEXT


def test_a_planted_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "index.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(safe_files.PlantedLinkError, match="not a regular file"):
        safe_files.open_append(str(fifo), "dump index")


def test_an_exception_dump_folder_link_is_refused(tmp_path):
    import tensorflow as tf

    from npurun.debug import exception_dump

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / exception_dump.DIRECTORY
    link.symlink_to(elsewhere)
    error = tf.errors.InvalidArgumentError(None, None, "bad value")
    with pytest.raises(safe_files.PlantedLinkError) as raised:
        exception_dump.write_exception_dump(error, None, None, "train", root=str(tmp_path))
    assert names_link(raised.value, link)
    assert os.listdir(elsewhere) == []


# --------------------------------------------------------------------------- checkpoints' side files

def test_the_checkpoint_state_file_is_never_written_through_a_link(tmp_path, victim):
    link = tmp_path / "checkpoint"
    link.symlink_to(victim)
    with pytest.raises(safe_files.PlantedLinkError) as error:
        checkpoints.write_state_file(str(tmp_path), [str(tmp_path / "model.ckpt-1")], [1.0], 0.0)
    assert names_link(error.value, link)
    assert victim.read_text() == VICTIM_TEXT


def test_side_files_use_no_guessable_temporary_name(tmp_path, victim):
    # Before: `<file>.tmp` and `checkpoint.tmp<pid>` were opened with open(..., "w"), following a link
    # planted under that predictable name.
    for guessed in (f"{checkpoints.FINISHED_FILE}.tmp", f"checkpoint.tmp{os.getpid()}"):
        (tmp_path / guessed).symlink_to(victim)
    checkpoints.mark_finished(str(tmp_path), 7)
    checkpoints.write_state_file(str(tmp_path), [str(tmp_path / "model.ckpt-7")], [1.0], 0.0)
    assert victim.read_text() == VICTIM_TEXT
    assert checkpoints.finished_step(str(tmp_path)) == 7
    assert "model.ckpt-7" in (tmp_path / "checkpoint").read_text()


def test_a_finished_marker_link_is_a_warning_naming_it(tmp_path, victim, caplog):
    link = tmp_path / checkpoints.FINISHED_FILE
    link.symlink_to(victim)
    checkpoints.mark_finished(str(tmp_path), 7)
    assert victim.read_text() == VICTIM_TEXT
    assert any(str(link) in r.getMessage() and "symbolic link" in r.getMessage() for r in caplog.records)


def test_an_export_never_writes_into_a_planted_temporary_folder(tmp_path, monkeypatch):
    from npurun.estimator import export

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    base = tmp_path / "export"
    base.mkdir()
    monkeypatch.setattr(export.time, "time", lambda: 1000)
    (base / "temp-1000").symlink_to(elsewhere)  # the name the next export would use
    final, temporary = export._new_export_dirs(str(base))
    assert (final, temporary) == (str(base / "1001"), str(base / "temp-1001"))
    assert os.path.isdir(temporary) and not os.path.islink(temporary)
    assert json.dumps(os.listdir(elsewhere)) == "[]"


def _tiny_model_fn(features, labels, mode):
    import tensorflow as tf

    from npurun import EstimatorSpec

    loss = tf.reduce_mean(tf.square(tf.compat.v1.get_variable("w", [1]) * features - labels))
    step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=step)


def _tiny_input_fn():
    import numpy as np
    import tensorflow as tf

    x = np.ones([4, 1], np.float32)
    return tf.data.Dataset.from_tensor_slices((x, x)).repeat().batch(2).take(2)


def test_folders_npurun_names_inside_model_dir_are_never_written_through_planted_links(tmp_path, make_config,
                                                                                      caplog):
    # Before: `eval/` was created and written by TensorFlow's FileWriter and `export/<name>/` by the
    # exporter (whose clean-up deletes old exports there), both following a link planted under that name.
    import logging

    from npurun.estimator import EvalSpec, NPUEstimator, TrainSpec, train_and_evaluate
    from npurun.estimator.exporters import LatestExporter

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    eval_target, export_target = tmp_path / "eval_target", tmp_path / "export_target"
    eval_target.mkdir()
    (export_target / "latest" / "1000000000").mkdir(parents=True)  # an "old export" the clean-up would delete
    (model_dir / "eval").symlink_to(eval_target)
    (model_dir / "export").symlink_to(export_target)
    estimator = NPUEstimator(_tiny_model_fn, config=make_config(model_dir=str(model_dir)))
    estimator.train(_tiny_input_fn, max_steps=1)
    with caplog.at_level(logging.WARNING, logger="npurun"):
        results = estimator.evaluate(_tiny_input_fn)
    assert results["global_step"] == 1  # the evaluation itself succeeds; TensorBoard misses its results
    assert any(str(model_dir / "eval") in r.getMessage() and "symbolic link" in r.getMessage() for r in caplog.records)
    assert os.listdir(eval_target) == []

    exporter = LatestExporter("latest", lambda: None, exports_to_keep=1)  # refused before it is called
    with pytest.raises(safe_files.PlantedLinkError) as error:
        train_and_evaluate(estimator, TrainSpec(_tiny_input_fn, max_steps=2),
                           EvalSpec(_tiny_input_fn, steps=1, exporters=[exporter], throttle_secs=0))
    assert names_link(error.value, model_dir / "export")
    assert os.listdir(export_target / "latest") == ["1000000000"]


def test_event_files_have_names_nobody_can_plant_a_link_under(tmp_path, victim):
    # TensorFlow's FileWriter opens `events.out.tfevents.<second>.<host><suffix>` with fopen, following a link.
    # Before: the suffix was `.<pid>.<counter>`, so links planted for the next seconds were written through.
    import copy
    import socket
    import time

    import tensorflow as tf

    from npurun.estimator import building

    counter = next(copy.copy(building._writer_ids))
    now = int(time.time())
    for second in range(now, now + 60):
        name = f"events.out.tfevents.{second}.{socket.gethostname()}.{os.getpid()}.{counter:06d}"
        (tmp_path / name).symlink_to(victim)
    writer = building.summary_writer(str(tmp_path))
    writer.add_summary(tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag="x", simple_value=1.0)]), 1)
    writer.close()
    assert victim.read_text() == VICTIM_TEXT
    written = [p for p in tmp_path.glob("events.out.tfevents.*") if not p.is_symlink()]
    assert len(written) == 1 and written[0].stat().st_size > 0


# --------------------------------------------------------------------------- docs/security.md

SECURITY_DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "security.md")


@pytest.mark.parametrize("code", re.findall(r"```python\n(.*?)```", open(SECURITY_DOC, encoding="utf-8").read(), re.S))
def test_security_doc_example_runs(code, capsys, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the example's mkdtemp folders
    exec(compile(code, SECURITY_DOC, "exec"), {"__name__": "__doc_example__"})
    assert "is a symbolic link (to " in capsys.readouterr().out
