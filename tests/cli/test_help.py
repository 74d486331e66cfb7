"""The light commands (import, a config, `npurun explain`, every `--help`) are silent and light, and
every command's help teaches: what it does, where its output goes, an example of itself."""
import argparse
import os
import subprocess
import sys

import pytest

from npurun.cli import build_parser, main


def _command_paths(parser, prefix=()):
    """('explain',), ('dump',), ('dump', 'ls'), ... for every command and subcommand of the parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,)
                yield from _command_paths(sub, prefix + (name,))


COMMANDS = list(_command_paths(build_parser()))

SILENT_PROBE = """
import contextlib, io, sys
import npurun
npurun.NPURunConfig(iterations_per_loop=10, precision_mode='allow_mix_precision', save_checkpoints_steps=20)
from npurun.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(['explain', '--set', 'iterations_per_loop=10', '--set', 'dump_config.dump_step=0']) == 0
for path in [()] + {commands!r}:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main([*path, '--help'])
        except SystemExit as done:
            assert done.code == 0, path
    assert out.getvalue().startswith('usage: npurun'), path
print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras', 'tensorboard')))
"""


def test_import_config_explain_and_every_help_warn_about_nothing_and_import_no_tensorflow():
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "NPURUN_VERBOSE", "PYTHONWARNINGS")}
    done = subprocess.run([sys.executable, "-W", "error", "-c", SILENT_PROBE.format(commands=COMMANDS)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no warning (they would be errors here), no TensorFlow chatter
    assert done.stdout.strip() == "[]"


def _help(path, capsys):
    with pytest.raises(SystemExit) as done:
        main([*path, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_help_shows_an_example_of_itself(path, capsys):
    text = _help(path, capsys)
    examples = text.partition("\nexamples:\n")[2]
    assert any(line.lstrip().startswith("npurun " + " ".join(path)) for line in examples.splitlines()), text


@pytest.mark.parametrize("path,facts", [
    ((), ["--set NAME=VALUE", "--config FILE", "npurun COMMAND --help"]),
    (("explain",), ["stdout", "Exit\nstatus 2", "Does not import TensorFlow"]),
    (("train",), ["model directory", "TensorBoard", "resumes"]),
    (("run",), ["exit status is the script's", "NPURUN_TF_API", "RANK_SIZE=1"]),
    (("migrate",), ["stdout", "stderr", "--in-place"]),
    (("check",), ["not run", "Exit\nstatus 1"]),
    (("dump",), ["stdout", "newest"]),
    (("dump", "compare"), ["Exit\nstatus 0", "1 when one does not"]),
])
def test_help_says_where_output_goes_and_what_the_exit_status_means(path, facts, capsys):
    text = " ".join(_help(path, capsys).split())  # facts may be wrapped anywhere
    for fact in facts:
        assert " ".join(fact.split()) in text, (path, fact)
