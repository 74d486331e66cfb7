"""Fuzzing every input npurun takes (issue 27): option values, sub-configs, the parsers, TF_CONFIG and
the command line (`explain --set`, `dump ls` on junk directories, `check` on junk scripts).

Asserted for every example: only the documented exception types (OptionValueError / OptionTypeError /
OptionConflictError; ValueError for the parsers and the environment), every message names the option
(or the variable), nothing is written (the working directory is unchanged), and the CLI returns its
exit status (0, 1 or 2) with one paragraph per error, never a traceback. Bounded: fixed example
counts, no deadline (a loaded machine is slow, not wrong); the whole module takes well under a minute.
CLI cases run in-process through `npurun.cli.main`.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npurun import DumpConfig, NPURunConfig, ProfilingConfig
from npurun.cli import main
from npurun.config import OPTIONS, parsers
from npurun.config.cluster import read_cluster
from npurun.config.errors import OptionConflictError, OptionTypeError, OptionValueError

DOCUMENTED = (OptionValueError, OptionTypeError, OptionConflictError)
# derandomize: the same examples on every run, so a failure in CI is reproducible, never a flake.
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                derandomize=True)
FEW = settings(FUZZ, max_examples=25)

TRICKY_TEXT = ["", " ", "\x00", "a\x00b", "~", "/", "a" * 5000, "d/" + "b" * 300, "/dev/null", "/dev/zero",
               "/etc/passwd", "/proc/self/environ", "0", "-1", "1e3", "nan", "inf", "true", "None", "9" * 5000,
               "\u0663", "\u00b2", "\udcff", "\ud800", "{}", "[]", '{"output": "\\u0000"}', "GA,GA", "a:b:c",
               "getnext:[1~0]", "DNN_VM_TF:99", "0|5|3", "1" + "0" * 30]
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(),
    st.integers(min_value=2 ** 31 - 3, max_value=2 ** 31 + 3), st.integers(min_value=2 ** 63 - 3, max_value=2 ** 70),
    st.integers(max_value=-2 ** 63 + 3, min_value=-2 ** 70), st.floats(), st.text(max_size=40),
    st.sampled_from(TRICKY_TEXT), st.binary(max_size=8), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2), st.tuples(st.text(max_size=3)))
# Secrets a message must never hold: the content of a file that is not of an option's format.
PASSWD_LINE = "root:" if os.path.exists("/etc/passwd") else None


@contextlib.contextmanager
def fresh_cwd():
    """Run in an empty working directory; fail when anything was written to it."""
    before = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="npurun-fuzz-") as where:
        os.chdir(where)
        try:
            yield where
            assert os.listdir(where) == [], f"written: {os.listdir(where)}"
        finally:
            os.chdir(before)


def assert_documented(error: Exception, names) -> None:
    assert isinstance(error, DOCUMENTED), f"{type(error).__name__}: {error}"
    message = str(error)
    assert any(f"'{name}'" in message for name in names), message
    assert len(message) < 2000
    if PASSWD_LINE:
        assert PASSWD_LINE not in message


def build(factory, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            config = factory(**kwargs)
        except Exception as error:  # noqa: BLE001 - checked below
            assert_documented(error, kwargs)
            return
    # What was accepted is what TensorFlow and the OS accept later: int64 integers, text without NUL.
    for name, value in kwargs.items():
        kept = config._values[name] if name in factory.OPTIONS else value
        if name in getattr(factory, "OPTIONS", {}) and factory.OPTIONS[name].validate.__qualname__.startswith("anything"):
            continue  # stored for migration tooling only, never used
        if isinstance(kept, (int, float)) and not isinstance(kept, bool):
            assert -2 ** 63 <= kept < 2 ** 63, (name, kept)
        if isinstance(kept, str):
            assert "\x00" not in kept, name


NAMES = sorted(OPTIONS)


@settings(FUZZ, max_examples=150)
@given(st.sampled_from(NAMES), JUNK)
def test_npurun_run_config_one_option(name, value):
    with fresh_cwd():
        build(NPURunConfig, {name: value})


@FUZZ
@given(st.dictionaries(st.sampled_from(NAMES), JUNK, min_size=2, max_size=3))
def test_npurun_run_config(kwargs):
    with fresh_cwd():
        build(NPURunConfig, kwargs)


@settings(FUZZ, max_examples=100)
@given(st.dictionaries(st.sampled_from(sorted(DumpConfig.OPTIONS)), JUNK, min_size=1, max_size=2))
def test_dump_config(kwargs):
    with fresh_cwd():
        build(DumpConfig, kwargs)


PROFILING_TEXT = st.one_of(JUNK, st.sampled_from(['{"output": "p"}', '{"output": "a\\u0000"}',
                                                   '{"output": "' + "x" * 5000 + '"}', "training_trace:task_trace",
                                                   "training_trace:nope", '{"task_trace": "on"}']))


@FUZZ
@given(st.fixed_dictionaries({}, optional={"enable_profiling": JUNK, "profiling_options": PROFILING_TEXT,
                                           "enable_options": JUNK}).filter(bool))
def test_profiling_config(kwargs):
    with fresh_cwd():
        build(ProfilingConfig, kwargs)


PARSERS = [parsers.parse_memory_size, parsers.parse_comma_list, parsers.parse_device_list, parsers.parse_dump_step,
           parsers.parse_shape_ranges, parsers.parse_stream_parallel, parsers.parse_profiling_options,
           parsers.parse_mixlist, parsers.parse_fusion_switch, parsers.parse_op_precision_ini]


@FUZZ
@given(st.sampled_from(PARSERS), st.one_of(JUNK, st.text(alphabet="[]{}:,~|-\"0123456789 =\n", max_size=60)))
def test_parsers_raise_value_error_only(parse, value):
    try:
        parse(value)
    except ValueError as error:
        assert len(str(error)) < 2000
    except RecursionError as error:  # pragma: no cover - a failure
        raise AssertionError(f"{parse.__name__}: RecursionError") from error


JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["cluster", "task", "type", "index", "worker", "chief", "ps", "evaluator",
                                         "x"]), inner, max_size=3), max_leaves=12)
TF_CONFIG = st.one_of(JSON.map(json.dumps), st.sampled_from(["[" * 100000, '{"task":"x"}', "{", "nan", "",
                                                             '{"cluster": {"worker": ["a:1"]}, "task": {"type": '
                                                             '"worker", "index": 5}}']),
                      st.text(max_size=30))


@FUZZ
@given(TF_CONFIG)
def test_tf_config_environments(raw):
    try:
        info = read_cluster({"TF_CONFIG": raw})
    except ValueError as error:
        assert "TF_CONFIG" in str(error) and len(str(error)) < 2000
        return
    # What was accepted is usable: the derived properties are computed without error.
    assert isinstance(info.is_chief, bool) and isinstance(info.global_id_in_cluster, int)
    assert isinstance(info.master, str) and info.num_worker_replicas >= 0


def cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            status = main(argv)
        except SystemExit as exit_:  # argparse's usage errors
            status = exit_.code
    text = err.getvalue()
    assert "Traceback" not in text, text
    return status, out.getvalue(), text


def assert_one_paragraph(status, err):
    if status:
        errors = [line for line in err.strip().splitlines() if not line.startswith("note:")]
        assert errors, err
        assert len(errors) == 1 or errors[0].startswith("usage:"), err


def as_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (list, dict)) else str(value)


SET_NAMES = st.one_of(st.sampled_from(NAMES + [f"dump_config.{n}" for n in DumpConfig.OPTIONS] +
                                      [f"profiling_config.{n}" for n in ProfilingConfig.OPTIONS]),
                      st.text(alphabet="abc_.", min_size=1, max_size=8))


@FUZZ
@given(st.lists(st.tuples(SET_NAMES, JUNK.map(as_text)), min_size=1, max_size=3))
def test_cli_explain_set(assignments):
    argv = ["explain", "--only-set"]
    for name, value in assignments:
        if "\x00" in value or any(0xd800 <= ord(c) <= 0xdfff for c in value):
            value = value.replace("\x00", "")  # argv cannot hold NUL; the API tests above cover it
        argv += ["--set", f"{name}={value}"]
    with fresh_cwd():
        status, _, err = cli(argv)
    assert status in (0, 2), err
    assert_one_paragraph(status, err)
    if status == 2 and err.startswith("npurun: invalid configuration"):
        assert any(name.split(".")[-1] in err or name.split(".")[0] in err for name, _ in assignments), err


INDEX_LINE = st.one_of(JSON.map(json.dumps), st.text(max_size=20),
                       st.fixed_dictionaries({"op": st.text(max_size=5), "io": st.sampled_from(["input", "output"]),
                                              "slot": st.integers()},
                                             optional={"file": st.one_of(st.none(), st.sampled_from(
                                                 ["/etc/hostname", "../x.npy", "a.npy", "", "step_0/a.npy"])),
                                                       "step": JSON, "stats": JSON, "shape": JSON}).map(json.dumps))


@FEW
@given(st.one_of(st.lists(INDEX_LINE, max_size=4).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
                 st.binary(max_size=40)),
       st.sampled_from(["ls", "show", "compare"]))
def test_cli_dump_on_junk_directories(index, command):
    with tempfile.TemporaryDirectory(prefix="npurun-fuzz-dump-") as where:
        with open(os.path.join(where, "index.jsonl"), "wb") as handle:
            handle.write(index)
        with open(os.path.join(where, "a.npy"), "wb") as handle:
            handle.write(b"\x93NUMPY junk")
        before = sorted(os.listdir(where))
        argv = ["dump", command, where] + ([where] if command == "compare" else [])
        with fresh_cwd():
            status, _, err = cli(argv)
        assert sorted(os.listdir(where)) == before
    assert status in (0, 1, 2), err
    assert_one_paragraph(status, err)


SCRIPT_TEXT = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"x = " + b"+".join([b"1"] * 3000), b"(" * 300, b"x = '\xff'",
                     b"from npu_bridge.npu_init import *\nc = NPURunConfig(modify_mixlist='/etc/passwd', "
                     b"precision_mode='allow_mix_precision', op_precision_mode='/etc/passwd')\n",
                     b"import npurun\nnpurun.NPURunConfig(iterations_per_loop=2**63, model_dir='a\\x00b')\n"]),
    st.lists(st.sampled_from(["import tensorflow as tf", "from npu_bridge.npu_init import *",
                              "c = NPURunConfig(iterations_per_loop=", "hvd.rank()", "tf.estimator.RunConfig(",
                              ")", "(", "x = [", "]", "def f():", "    return 1", "\\", "'", '"""', "\x00"]),
             max_size=6).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")))


@FEW
@given(SCRIPT_TEXT)
def test_cli_check_on_junk_scripts(content):
    with tempfile.TemporaryDirectory(prefix="npurun-fuzz-check-") as where:
        script = os.path.join(where, "train.py")
        with open(script, "wb") as handle:
            handle.write(content)
        with fresh_cwd():
            status, out, err = cli(["check", script])
        assert os.listdir(where) == ["train.py"]
    assert status in (0, 1, 2), err
    assert_one_paragraph(status if status == 2 else 0, err)
    if PASSWD_LINE:
        assert PASSWD_LINE not in out


# Probes of the security and fault round: each failed before its fix (a value taken as given and
# used later, a hang, a write through a planted link).
BAD_ARGUMENTS = [
    (["train", "--steps", "9" * 23], "--steps"),  # trained "forever": not an int64 global step
    (["train", "--steps", str(2 ** 63)], "--steps"),
    (["train", "--model-dir", "/tmp/npurun-fuzz-\udcff"], "--model-dir"),  # a non-UTF-8 byte: TensorFlow's I/O raised
    (["train", "--export-dir", "/dev/null"], "--export-dir"),  # found only after training
    (["explain", "--set", "model_dir=/tmp/npurun-fuzz-\udcff"], "model_dir"),
    (["dump", "compare", "a", "b", "--rtol", "nan"], "--rtol"),
    (["dump", "compare", "a", "b", "--rtol", "-1"], "--rtol"),
    (["dump", "compare", "a", "b", "--atol", "inf"], "--atol"),
    (["dump", "compare", "a", "b", "--plot", ""], "--plot"),  # was silently no plot
    (["launch", "-n", "100000000", "train.py"], "-n"),  # opened sockets until EMFILE
    (["launch", "-n", "2", "--hosts", "", "train.py"], "--hosts"),  # was ignored
    (["launch", "-n", "2", "--hosts", "h\u00fcst:1,x:1", "train.py"], "--hosts"),
    (["launch", "-n", "1", "/nonexistent/train.py"], "no such script"),  # was found by the started rank
]


@pytest.mark.parametrize("argv, named", BAD_ARGUMENTS)
def test_cli_bad_arguments_are_one_error_naming_the_option_before_anything_runs(argv, named):
    with fresh_cwd():
        status, _, err = cli(argv)
    assert status == 2, err
    assert_one_paragraph(status, err)
    assert named in err, err


@pytest.mark.parametrize("argv", [["explain", "--config", "{fifo}"], ["check", "{fifo}"], ["migrate", "{fifo}"],
                                  ["launch", "-n", "1", "{fifo}"]])
def test_a_fifo_given_as_a_file_never_hangs(tmp_path, argv):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody writes to it: a plain open() for reading blocks forever
    import npurun

    source = os.path.dirname(os.path.dirname(os.path.abspath(npurun.__file__)))  # this npurun, from any cwd
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "npurun.cli", *[a.format(fifo=fifo) for a in argv]],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["fifo"]


def test_dump_compare_never_writes_its_plot_through_a_planted_link(tmp_path):
    import numpy as np

    from npurun.debug.dump_files import DumpWriter

    for name, value in (("a", 1.0), ("b", 2.0)):
        DumpWriter(str(tmp_path / name), "tensor").write(kind="tensor", step=0, op="dense/MatMul", op_type="MatMul",
                                                         io="output", slot=0, tensor="dense/MatMul:0",
                                                         value=np.full([3], value, np.float32))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "error.png"
    link.symlink_to(victim)
    status, _, err = cli(["dump", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--plot", str(link)])
    assert status == 2 and "--plot" in err and "symbolic link" in err, err
    assert victim.read_text() == "keep" and link.is_symlink()


@pytest.mark.parametrize("variables, named", [({"RANK_SIZE": "abc"}, "RANK_SIZE"),
                                              ({"ASCEND_DEVICE_ID": "-1"}, "ASCEND_DEVICE_ID"),
                                              ({"RANK_SIZE": "2", "RANK_ID": "7"}, "RANK_ID")])
def test_cli_train_refuses_a_bad_rank_or_device_variable_before_anything_is_written(monkeypatch, variables, named):
    # Before: the new model_dir_* was created, then training read the variable and failed.
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with fresh_cwd():
        status, _, err = cli(["train", "--steps", "1"])
    assert status == 2 and named in err, err
    assert_one_paragraph(status, err)


def test_a_looping_or_dangling_link_as_a_directory_is_refused_naming_it(tmp_path):
    # Before: os.makedirs failed with "File exists" after the configuration was taken.
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    for argv, named in ((["train", "--model-dir", str(tmp_path / "loop1")], "--model-dir"),
                        (["train", "--export-dir", str(tmp_path / "loop2")], "--export-dir"),
                        (["explain", "--set", f"model_dir={tmp_path / 'loop1'}"], "model_dir")):
        with fresh_cwd():
            status, _, err = cli(argv)
        assert status == 2 and named in err and "symbolic link to nothing, or in a loop" in err, err
