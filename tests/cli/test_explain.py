"""`npurun explain` and the promise that the configuration layer never imports TensorFlow."""
import json
import subprocess
import sys

import pytest

from npurun.cli import main
from npurun.config import OPTIONS

NO_TF_PROBE = """
import sys, time
start = time.perf_counter()
{body}
elapsed = time.perf_counter() - start
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'tensorboard'))
print(repr((elapsed, heavy)))
"""


def _probe(body):
    out = subprocess.run([sys.executable, "-c", NO_TF_PROBE.format(body=body)], capture_output=True, text=True,
                         check=True).stdout
    return eval(out.strip().splitlines()[-1])


# How fast these are is measured in bench/config_startup.py, not asserted here.
def test_constructing_a_config_imports_no_tensorflow():
    _, heavy = _probe("import npurun\nnpurun.NPURunConfig(iterations_per_loop=10, "
                            "precision_mode='allow_mix_precision', save_checkpoints_steps=20)")
    assert heavy == []


def test_explain_imports_no_tensorflow():
    _, heavy = _probe("from npurun.cli import main\nimport contextlib, io\n"
                            "with contextlib.redirect_stdout(io.StringIO()):\n"
                            "    main(['explain', '--set', 'iterations_per_loop=10'])\n"
                            "    main(['explain', '--adapter', 'npu_device', '--set', 'dump_config.dump_step=1'])")
    assert heavy == []


def test_explain_has_one_row_per_option(capsys):
    assert main(["explain", "--format", "json", "--set", "iterations_per_loop=10",
                 "--set", "save_checkpoints_steps=20"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["option"] for r in rows] == list(OPTIONS)
    by_name = {r["option"]: r for r in rows}
    assert by_name["iterations_per_loop"]["value"] == 10
    assert by_name["iterations_per_loop"]["default"] is False
    assert by_name["precision_mode"]["default"] is True
    assert by_name["horovod_mode"]["kind"] == "not supported"
    assert all(r["kind"] in ("effect", "effect (GPU only)", "accepted, no effect here", "not supported",
                             "not implemented yet") for r in rows)


def test_explain_reads_yaml_and_json_files_and_set_wins(tmp_path, capsys):
    yaml_file = tmp_path / "run.yaml"
    yaml_file.write_text("iterations_per_loop: 10\nsave_checkpoints_steps: 20\nprecision_mode: force_fp16\n")
    assert main(["explain", "--format", "json", "--config", str(yaml_file), "--set", "iterations_per_loop=20"]) == 0
    by_name = {r["option"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["iterations_per_loop"]["value"] == 20
    assert by_name["precision_mode"]["value"] == "force_fp16"
    json_file = tmp_path / "run.json"
    json_file.write_text(json.dumps({"dump_config": {"enable_dump": True, "dump_path": str(tmp_path)}}))
    assert main(["explain", "--format", "json", "--config", str(json_file)]) == 0
    by_name = {r["option"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["dump_config"]["value"] == {"enable_dump": True, "dump_path": str(tmp_path)}


@pytest.mark.parametrize("args,message", [
    (["--set", "iterations_per_loop=0"], "'iterations_per_loop': got 0"),
    (["--set", "precision_mode=fp8"], "'precision_mode'"),
    (["--set", "save_checkpoints_steps=1", "--set", "save_checkpoints_secs=1"], "save_checkpoints_secs"),
    (["--set", "no_such_option=1"], "no_such_option"),
    (["--set", "noequals"], "name=value"),
    (["--config", "/nonexistent/run.yaml"], "config file"),
])
def test_invalid_configuration_exits_2_with_the_message(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["explain", *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_explain_table_marks_what_you_set(capsys):
    main(["explain", "--only-set", "--set", "iterations_per_loop=10", "--set", "save_checkpoints_steps=20"])
    out = capsys.readouterr().out
    assert "iterations_per_loop" in out and "save_checkpoints_steps" in out
    assert "precision_mode" not in out


@pytest.mark.parametrize("module", ["npurun.cli", "npurun"])
def test_console_script_help_teaches(module):
    # `python -m npurun` is the command too (people type it when the console script is not on PATH)
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "--set" in out and "explain" in out and "train" in out and "examples:" in out


def test_text_options_keep_true_and_false_as_text(tmp_path, capsys):
    # YAML reads `true` as a boolean; jit_compile takes the strings 'true' / 'false'.
    assert main(["explain", "--format", "json", "--set", "jit_compile=true", "--set", "enable_data_pre_proc=false"]) == 0
    by_name = {r["option"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["jit_compile"]["value"] == "true"
    assert by_name["enable_data_pre_proc"]["value"] is False  # a boolean option stays boolean
    yaml_file = tmp_path / "run.yaml"
    yaml_file.write_text("jit_compile: false\n")
    assert main(["explain", "--format", "json", "--config", str(yaml_file)]) == 0
    by_name = {r["option"]: r for r in json.loads(capsys.readouterr().out)}
    assert by_name["jit_compile"]["value"] == "false"


def test_json_honours_only_set_and_holds_json_values(capsys):
    assert main(["explain", "--format", "json", "--only-set", "--set", "iterations_per_loop=10",
                 "--set", "precision_mode=allow_mix_precision_bf16"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["option"]: r["value"] for r in rows} == {"iterations_per_loop": 10,
                                                       "precision_mode": "allow_mix_precision_bf16"}
    assert main(["explain", "--format", "json"]) == 0
    by_name = {r["option"]: r["value"] for r in json.loads(capsys.readouterr().out)}
    assert by_name["model_dir"] is None and by_name["enable_data_pre_proc"] is True


def test_table_shows_sub_configs_whole(tmp_path, capsys):
    path = str(tmp_path / "a-rather-long-directory-name-for-dumps")
    (tmp_path / "a-rather-long-directory-name-for-dumps").mkdir()
    assert main(["explain", "--only-set", "--set", "dump_config.enable_dump=true",
                 "--set", f"dump_config.dump_path={path}", "--set", "dump_config.dump_mode=all"]) == 0
    out = capsys.readouterr().out
    assert "..." not in out
    header, *rows = out.splitlines()
    start, end = header.index("value"), header.index("kind") - 3  # the value column, before the "set" marker
    value_column = "".join(line[start:end].strip() for line in rows[1:])
    assert f"dump_path={path!r}" in value_column and "dump_mode='all'" in value_column


def test_an_unknown_option_gets_a_did_you_mean(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["explain", "--set", "iteration_per_loop=3"])
    assert exit_.value.code == 2
    assert "did you mean 'iterations_per_loop'?" in capsys.readouterr().err


def test_explain_says_what_xla_compiles_in_a_device_loop_and_the_cpu_advice(capsys, monkeypatch):
    from npurun.config import xla_advice

    monkeypatch.delenv("NPURUN_XLA_DEVICE_LOOP", raising=False)
    monkeypatch.setattr("npurun.precision.policy.gpu_likely_present", lambda environ=None: False)
    assert main(["explain", "--format", "json", "--set", "jit_compile=true", "--set", "iterations_per_loop=50"]) == 0
    rows = {r["option"]: r for r in json.loads(capsys.readouterr().out)}
    mechanism = rows["jit_compile"]["mechanism"]
    assert "here: each device-loop step is one XLA computation inside TensorFlow's loop" in mechanism
    assert "convnet: jit_compile='false'" in mechanism and "dense: " in mechanism
    monkeypatch.setenv("NPURUN_XLA_DEVICE_LOOP", "loop")
    assert main(["explain", "--format", "json", "--set", "jit_compile=true", "--set", "iterations_per_loop=50"]) == 0
    rows = {r["option"]: r for r in json.loads(capsys.readouterr().out)}
    assert "here: the whole device loop is one XLA computation" in rows["jit_compile"]["mechanism"]
    # a GPU compiles the whole loop by default, and the CPU advice is not shown there
    assert xla_advice.summary_here("auto", 50, False, gpu=True, environ={}) == \
        "here: the whole device loop is one XLA computation (NPURUN_XLA_DEVICE_LOOP=loop)"
    assert xla_advice.summary_here("auto", 1, False, gpu=False, environ={}).startswith("here: no XLA; CPU advice")


def _npu_device_rows(capsys, *args):
    assert main(["explain", "--format", "json", *args]) == 0
    return {r["option"]: r for r in json.loads(capsys.readouterr().out)}


def test_explain_npu_device_says_why_each_option_tf2_cannot_honour_does_nothing(capsys):
    from npurun.adapter.npu_device import configs

    rows = _npu_device_rows(capsys, "--adapter", "npu_device", "--set", "hcom_parallel=false",
                            "--set", "dump_config.enable_dump=true", "--set", "dump_config.dump_path=/tmp",
                            "--set", "dump_config.dump_step=1|3")
    assert rows["hcom_parallel"]["value"] is False and rows["hcom_parallel"]["default"] is False
    for name, why in configs.TF2_NO_EFFECT.items():  # NPURunConfig honours these; TF 2's runtime cannot
        assert rows[name]["kind"] == "accepted, no effect here" and rows[name]["mechanism"].startswith(why)
    assert rows["dump_config.dump_step"]["value"] == "1|3" and rows["dump_config.dump_step"]["kind"] == "effect"
    assert rows["op_compiler_cache_mode"]["value"] == "enable"  # the TF 2 adapter's default
    assert rows["experimental.multi_branches_config.dynamic_dims"]["kind"] == "accepted, no effect here"
    assert "iterations_per_loop" not in rows  # no such global_options() attribute


def test_explain_of_a_script_picks_the_adapter_it_imports(tmp_path, capsys):
    tf2 = tmp_path / "train.py"
    tf2.write_text("import npu_device\nnpu_device.open().as_default()\n")
    assert "dump_config.dump_step" in _npu_device_rows(capsys, str(tf2))
    tf1 = tmp_path / "bridge.py"
    tf1.write_text("from npu_bridge.npu_init import *\n")
    assert "iterations_per_loop" in _npu_device_rows(capsys, str(tf1))
    with pytest.raises(SystemExit) as exit_:
        main(["explain", "--only-set", str(tf2), "--set", "dump_config.dump_mode=everything"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "npu_device.global_options() option 'dump_mode'" in err and "everything" in err
    with pytest.raises(SystemExit):
        main(["explain", "--adapter", "npu_device", "--set", "dump_config.no_such=1"])
    assert "NpuDumpConfig has no option no_such" in capsys.readouterr().err
