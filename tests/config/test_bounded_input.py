"""Bounded input (issue 27): config files, quoted values, integer and path limits, TF_CONFIG.

Each test here failed before the fix: the alias bomb took gigabytes, `010` was 8, 2**63 timeouts
failed only at plan time, NUL bytes reached `os`, `enable_options=5` was "'int' object is not
iterable", an option file's content was quoted back, and a bad TF_CONFIG was an AttributeError.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from npurun import DumpConfig, NPURunConfig, ProfilingConfig
from npurun.cli import main
from npurun.config import sources
from npurun.config.cluster import read_cluster
from npurun.config.errors import OptionConflictError, OptionTypeError, OptionValueError, bounded_repr
from npurun.config.options import ITERATIONS_PER_LOOP_MAX, TIMEOUT_SECONDS_MAX

SRC = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["npurun"].__file__)))


def alias_bomb(levels: int = 9) -> str:
    """The classic billion-laughs: each level a list of 9 aliases of the one before (9**levels strings)."""
    lines = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghijk"[:levels - 1]:
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "work_path:\n" + "\n".join(lines) + "\n"


# ---- config files ------------------------------------------------------------------------------

def test_alias_bomb_is_refused_under_a_memory_cap(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    assert bomb.stat().st_size < 600
    # 300 MB of address space: the expansion (gigabytes) could not fit; npurun without TensorFlow does.
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (300 * 1024 ** 2, 300 * 1024 ** 2))
        from npurun.cli import main
        sys.exit(main(["explain", "--only-set", "--config", {str(bomb)!r}]))
    """)
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "anchors and aliases" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_anchors_and_aliases_are_refused_in_any_position(tmp_path):
    for text in ("a: &x 1\nwork_path: *x\n", "work_path: &x [1]\n", "? &k work_path\n: 1\n"):
        path = tmp_path / "c.yaml"
        path.write_text(text)
        with pytest.raises(ValueError, match="anchors and aliases"):
            sources.load_file(str(path))


@pytest.mark.parametrize("text, expected", [
    ("010", 10), ("0o10", 8), ("0x1F", 31), ("-7", -7), ("+7", 7), ("1e3", 1000.0), ("1:30", "1:30"),
    ("1_000", "1_000"), ("0b1", "0b1"), (".inf", float("inf")), ("true", True), ("null", None)])
def test_yaml_numbers_are_yaml_1_2(text, expected):
    assert sources.yaml_load(text) == expected and type(sources.yaml_load(text)) is type(expected)


def test_config_file_numbers_mean_what_they_say(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("iterations_per_loop: 010\nsave_checkpoints_steps: 020\n")
    config = sources.construct(sources.load_file(str(path)))
    assert config.iterations_per_loop == 10 and config.save_checkpoints_steps == 20
    path.write_text("save_checkpoints_secs: 1:30\n")  # YAML 1.1 read this as 90
    with pytest.raises(OptionTypeError, match="save_checkpoints_secs.*'1:30'"):
        sources.construct(sources.load_file(str(path)))


def test_set_values_are_yaml_1_2_too():
    assert sources.parse_assignments(["iterations_per_loop=010"])["iterations_per_loop"] == 10


def test_empty_config_path_is_an_error(capsys):
    assert_exit(["explain", "--config", ""], 2)
    assert "config file ''" in capsys.readouterr().err


def test_config_file_size_is_capped(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("work_path: " + "x" * (sources.FILE_LIMIT + 10) + "\n")
    with pytest.raises(ValueError, match="larger than"):
        sources.load_file(str(path))


def test_special_files_are_not_read_forever():
    with pytest.raises(ValueError, match="larger than"):
        sources.load_file("/dev/zero")


def test_deeply_nested_config_is_one_error(tmp_path):
    for name, text in (("deep.json", "[" * 100000), ("deep.yaml", "work_path: " + "[" * 100000)):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ValueError, match="config file"):
            sources.load_file(str(path))


def test_yaml_errors_are_one_paragraph(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1, 2\nb: : c\n")
    assert_exit(["explain", "--config", str(path)], 2)
    err = capsys.readouterr().err
    assert "not valid YAML" in err and len(err.strip().splitlines()) == 1


def assert_exit(argv, status):
    try:
        result = main(argv)
    except SystemExit as exit_:
        result = exit_.code
    assert result == status


# ---- quoted values -----------------------------------------------------------------------------

def test_bounded_repr_is_bounded_for_any_value():
    nested = ["lol"]
    for _ in range(40):  # 9**40 strings if expanded
        nested = [nested] * 9
    for value in (nested, 10 ** 100000, "x" * 10 ** 7, b"y" * 10 ** 7, {i: i for i in range(10 ** 5)}):
        assert len(bounded_repr(value)) <= 120
    assert bounded_repr({"a": [1, 2]}) == "{'a': [1, 2]}" and bounded_repr("abc") == "'abc'"
    assert "bits" in bounded_repr(10 ** 100000)


def test_warning_for_a_not_supported_option_quotes_a_bounded_value():
    nested = ["lol"]
    for _ in range(40):
        nested = [nested] * 9
    with pytest.warns(UserWarning, match="work_path") as caught:
        NPURunConfig(work_path=nested)
    assert max(len(str(w.message)) for w in caught) < 400


def test_error_for_a_huge_value_is_short():
    with pytest.raises(OptionTypeError) as error:
        NPURunConfig(iterations_per_loop="9" * 10 ** 6)
    assert len(str(error.value)) < 400 and "iterations_per_loop" in str(error.value)


# ---- integers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["op_wait_timeout", "hccl_timeout", "op_execute_timeout"])
def test_timeouts_fit_int64_milliseconds(name):
    NPURunConfig(**{name: TIMEOUT_SECONDS_MAX})
    for bad in (TIMEOUT_SECONDS_MAX + 1, 2 ** 63):
        with pytest.raises(OptionValueError, match=f"'{name}'.*{bad}.*{TIMEOUT_SECONDS_MAX}"):
            NPURunConfig(**{name: bad})


def test_iterations_per_loop_fits_the_loop_counter():
    with pytest.raises(OptionValueError, match=r"'iterations_per_loop'.*2147483647.*\[1, 2147483646\]"):
        NPURunConfig(iterations_per_loop=2 ** 31 - 1)
    assert ITERATIONS_PER_LOOP_MAX == 2 ** 31 - 2
    with pytest.raises(OptionValueError, match="iterations_per_loop"):
        NPURunConfig(iterations_per_loop=2 ** 63)


def test_collective_run_deadline_fits_int64():
    with pytest.raises(OptionConflictError, match="hccl_timeout.*iterations_per_loop"):
        NPURunConfig(hccl_timeout=TIMEOUT_SECONDS_MAX // 2, iterations_per_loop=4)


@pytest.mark.parametrize("name", ["tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                                  "keep_checkpoint_max", "log_step_count_steps", "session_device_id"])
def test_every_integer_option_stays_within_int64(name):
    with pytest.raises(OptionValueError, match=f"'{name}'.*int64"):
        NPURunConfig(**{name: 2 ** 63})
    if name == "tf_random_seed":
        with pytest.raises(OptionValueError, match="int64"):
            NPURunConfig(tf_random_seed=-2 ** 63 - 1)


@pytest.mark.parametrize("name", ["save_checkpoints_secs", "keep_checkpoint_every_n_hours"])
def test_number_options_are_finite_and_within_int64(name):
    for bad in (float("inf"), 2 ** 63, 10 ** 400, 1e300):
        with pytest.raises(OptionValueError, match=f"'{name}'.*finite"):
            NPURunConfig(**{name: bad})
    NPURunConfig(**{name: 2 ** 62})


# ---- strings and paths -------------------------------------------------------------------------

@pytest.mark.parametrize("build, name", [
    (lambda v: NPURunConfig(model_dir=v), "model_dir"),
    (lambda v: NPURunConfig(debug_dir=v), "debug_dir"),
    (lambda v: NPURunConfig(op_compiler_cache_dir=v), "op_compiler_cache_dir"),
    (lambda v: NPURunConfig(enable_scope_fusion_passes=v), "enable_scope_fusion_passes"),
    (lambda v: NPURunConfig(optypelist_for_implmode=v, op_select_implmode="high_precision"),
     "optypelist_for_implmode"),
    (lambda v: NPURunConfig(modify_mixlist=v, precision_mode="allow_mix_precision"), "modify_mixlist"),
    (lambda v: DumpConfig(dump_path=v), "dump_path"),
    (lambda v: DumpConfig(dump_layer=v), "dump_layer"),
    (lambda v: ProfilingConfig(profiling_options='{"output": "%s"}' % v.replace("\0", "\\u0000")),
     "profiling_options"),
])
def test_nul_characters_are_refused_up_front(build, name, tmp_path):
    os.chdir(tmp_path)
    with pytest.raises((OptionValueError, OptionTypeError), match=f"'{name}'.*NUL"):
        build("abc\0def")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("value, problem", [("a" * 4096, "bytes long; at most 4095"),
                                            ("d/" + "b" * 256, "components is 256 bytes"),
                                            ("x\udbff", "encoding cannot represent")])
def test_paths_that_no_file_system_takes_are_refused(value, problem):
    for build in (lambda: NPURunConfig(model_dir=value), lambda: NPURunConfig(debug_dir=value),
                  lambda: DumpConfig(dump_path=value)):
        with pytest.raises(OptionValueError, match=problem):
            build()


def test_profiling_enable_options_of_the_wrong_type_names_the_option():
    for bad in (5, "training_trace", [1], None.__class__):
        with pytest.raises(OptionTypeError, match="ProfilingConfig option 'enable_options'"):
            ProfilingConfig(enable_options=bad)
    with pytest.raises(OptionValueError, match="'enable_options'.*not known"):
        ProfilingConfig(enable_options=["nope"])


# ---- files named by options --------------------------------------------------------------------

SECRET = "s3cr3tuser:*:19000:0:99999:7:::\nPATH=/usr/very-secret\n{\"k\": \"hunter2\"}\n"


@pytest.mark.parametrize("kwargs", [
    {"modify_mixlist": None, "precision_mode": "allow_mix_precision"},
    {"op_precision_mode": None},
    {"fusion_switch_file": None},
])
def test_a_file_of_another_format_is_never_quoted(tmp_path, kwargs):
    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    name = next(k for k, v in kwargs.items() if v is None)
    with pytest.raises(OptionValueError) as error:
        NPURunConfig(**{**kwargs, name: str(secret)})
    message = str(error.value)
    assert name in message and "not a" in message
    for fragment in ("s3cr3t", "99999", "very-secret", "hunter2", "PATH"):
        assert fragment not in message.replace(str(secret), "")


def test_a_json_file_with_other_keys_is_not_quoted(tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"password": "hunter2"}')
    with pytest.raises(OptionValueError) as error:
        NPURunConfig(modify_mixlist=str(other), precision_mode="allow_mix_precision")
    assert "password" not in str(error.value) and "hunter2" not in str(error.value)


def test_a_huge_sparse_file_is_refused_without_reading_it(tmp_path):
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as handle:
        handle.truncate(3 * 1024 ** 3)
    with pytest.raises(OptionValueError, match="3221225472 bytes"):
        NPURunConfig(modify_mixlist=str(sparse), precision_mode="allow_mix_precision")


def test_a_file_of_the_format_is_still_quoted(tmp_path):
    mixlist = tmp_path / "mix.json"
    mixlist.write_text('{"black-list": {"to-add": ["Cast"], "to-remove": ["Cast"]}}')
    with pytest.raises(OptionValueError, match="'Cast'.*both"):
        NPURunConfig(modify_mixlist=str(mixlist), precision_mode="allow_mix_precision")


# ---- TF_CONFIG ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tf_config, problem", [
    ('{"task": "x"}', "'task' must be an object"),
    ("[" * 100000, "nested too deeply"),
    ('{"task": {"type": 3}}', "'type' must be a job name"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "zero"}}', "'index' must be an int"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}}', "'index' must be an int"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}}', "'index' must be an int"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "\u00b2"}}', "'index' must be an int"),
    ('{"cluster": {"worker": [1]}, "task": {"type": "worker"}}', "lists of addresses"),
    ('{"cluster": []}', "'cluster' must map"),
    (" " + "1" * (2 << 20), "at most"),
])
def test_bad_tf_config_is_one_value_error(tf_config, problem):
    with pytest.raises(ValueError, match=problem) as error:
        read_cluster({"TF_CONFIG": tf_config})
    assert "TF_CONFIG" in str(error.value)


@pytest.mark.parametrize("index", ['"1"', "1.0", '" 1 "', "1"])
def test_a_tf_config_task_index_is_read_as_tensorflow_reads_it(index, monkeypatch):
    # TensorFlow's cluster resolver calls int() on the index: a hand-written "index": "1" is task 1 there.
    from npurun.distribute.cluster import read_layout
    from npurun.tf_estimator.run_config import RunConfig

    tf_config = ('{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]}, '
                 '"task": {"type": "worker", "index": %s}}' % index)
    assert read_cluster({"TF_CONFIG": tf_config}).task_id == 1
    assert read_layout({"TF_CONFIG": tf_config}).task_id == 1
    monkeypatch.setenv("TF_CONFIG", tf_config)
    config = RunConfig()
    assert (config.task_type, config.task_id, config.is_chief) == ("worker", 1, False)


def test_bad_tf_config_on_the_command_line_is_one_paragraph(monkeypatch, capsys):
    for tf_config in ('{"task":"x"}', "[" * 100000):
        monkeypatch.setenv("TF_CONFIG", tf_config)
        assert_exit(["explain", "--only-set"], 2)
        err = capsys.readouterr().err
        assert "TF_CONFIG" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
