"""npurun run: the script runs as __main__ with its arguments, under the compat layer, and its exit status."""
import logging
import sys
import textwrap

import npurun.compat as compat
from npurun.compat.run import run_script
from npurun.logs import user_configured

from .conftest import run_compat


def test_script_runs_as_main_with_argv_and_compat_active(tmp_path, capsys):
    script = tmp_path / "train.py"
    (tmp_path / "helper_module_of_script.py").write_text("VALUE = 41\n")
    script.write_text(textwrap.dedent("""\
        import sys
        import npurun.compat
        from npu_bridge.estimator.npu.npu_config import NPURunConfig
        from helper_module_of_script import VALUE  # the script's directory is on sys.path
        print("argv", sys.argv[1:], __name__, npurun.compat.is_active(), NPURunConfig.__name__, VALUE + 1)
        """))
    argv = sys.argv[:]
    assert run_script(str(script), ["--steps", "3"]) == 0
    assert capsys.readouterr().out.strip() == "argv ['--steps', '3'] __main__ True NPURunConfig 42"
    assert sys.argv == argv and not compat.is_active() and "npu_bridge" not in sys.modules
    assert not user_configured(logging.getLogger("npurun"))  # the log handler of the run is removed again


def test_npurun_log_is_shown_during_the_run(tmp_path, capsys):
    script = tmp_path / "logs.py"
    script.write_text("import logging\nlogging.getLogger('npurun').info('loss = 0.5, step = 10')\n")
    assert run_script(str(script)) == 0
    assert "INFO:npurun:loss = 0.5, step = 10" in capsys.readouterr().err


def test_exit_status_is_the_scripts(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text("import sys\nsys.exit(int(sys.argv[1]))\n")
    assert run_script(str(script), ["3"]) == 3
    assert run_script(str(script), ["0"]) == 0
    assert run_script(str(tmp_path / "missing.py")) == 2


def test_cli_run_in_a_subprocess(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys\nfrom hccl.split.api import set_split_strategy_by_idx\n"
                      "set_split_strategy_by_idx([1, 2])\nprint('ran', sys.argv[1:])\nsys.exit(4)\n")
    done = run_compat("run", script, "-x", "--flag=1")
    assert done.returncode == 4 and done.stdout.strip() == "ran ['-x', '--flag=1']"
    assert "set_split_strategy_by_idx: accepted, no effect here" in done.stderr


def test_the_npurun_command_has_run_migrate_and_check(tmp_path):
    import subprocess

    script = tmp_path / "s.py"
    script.write_text("import sys\nimport npu_bridge.npu_init\nprint('args', sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-m", "npurun.cli", "run", str(script), "--lr", "0.1"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "args ['--lr', '0.1']", done.stderr[-2000:]
    for command in ("migrate", "check"):
        helped = subprocess.run([sys.executable, "-m", "npurun.cli", command, "--help"], capture_output=True, text=True)
        assert helped.returncode == 0 and f"usage: npurun {command}" in helped.stdout
