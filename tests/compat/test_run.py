"""npurun run: the script runs as __main__ with its arguments, under the compat layer, and its exit status."""
import json
import logging
import os
import sys
import textwrap

import pytest

import npurun.compat as compat
from npurun.tools.run import run_script
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


def test_each_npurun_line_is_shown_once_when_the_script_runs_under_app_run(tmp_path, capsys):
    # tf.compat.v1.app.run / absl.app.run put absl's handler on the root logger; npurun's lines reach it.
    script = tmp_path / "app_logs.py"
    script.write_text("import logging\nfrom absl import logging as absl_logging\n"
                      "absl_logging.use_absl_handler()\n"
                      "try:\n    logging.getLogger('npurun').info('loss = 0.5, step = 10')\n"
                      "finally:\n    logging.getLogger().removeHandler(absl_logging.get_absl_handler())\n")
    assert run_script(str(script)) == 0
    err = capsys.readouterr().err
    assert err.count("loss = 0.5, step = 10") == 1, err


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


def test_a_tf_estimator_script_under_the_command_gets_keras_2(tmp_path):
    # tf.estimator code is TensorFlow <= 2.15 code: its `from tensorflow.keras import layers` and `tf.keras`
    # were Keras 2. TensorFlow reads TF_USE_LEGACY_KERAS when it is imported, which the command does first.
    script = tmp_path / "keras_in_model_fn.py"
    script.write_text("import tensorflow as tf\nfrom tensorflow.keras import layers\n"
                      "assert hasattr(tf.estimator, 'DNNClassifier')\n"
                      "print(layers.Dense.__module__.split('.')[0], tf.keras.layers.Dense.__module__.split('.')[0])\n")
    import subprocess

    environment = {name: value for name, value in os.environ.items() if name != "TF_USE_LEGACY_KERAS"}
    done = subprocess.run([sys.executable, "-m", "npurun.cli", "run", str(script)], capture_output=True, text=True,
                          env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["tf_keras", "tf_keras"]


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


@pytest.mark.parametrize("api", ["1", "2"])  # TF 1 scripts, and tf.estimator code (TF <= 2.15: Keras 2)
def test_run_script_leaves_no_legacy_keras_setting_behind(tmp_path, monkeypatch, api):
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    monkeypatch.setenv("NPURUN_TF_API", api)
    script = tmp_path / "keras_setting.py"
    script.write_text("import os, sys\nsys.exit(0 if os.environ.get('TF_USE_LEGACY_KERAS') == '1' else 7)\n")
    assert run_script(str(script)) == 0, "the script sees tf.keras as TensorFlow 1 scripts knew it"
    assert "TF_USE_LEGACY_KERAS" not in os.environ, "child processes of later code (a TF 2.15 oracle) must not inherit it"


@pytest.mark.parametrize("before", [
    {},  # nothing set: the script gets npurun's defaults
    {"TF_USE_LEGACY_KERAS": "0", "RANK_SIZE": "4", "RANK_ID": "3"},  # set: the script gets these
])
@pytest.mark.parametrize("ending", ["return", "raise"])
def test_an_in_process_run_leaves_the_environment_exactly_as_before(tmp_path, monkeypatch, before, ending):
    for name in ("TF_USE_LEGACY_KERAS", "RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in before.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NPURUN_TF_API", "1")
    seen = tmp_path / "seen.json"
    script = tmp_path / "environment.py"
    script.write_text(f"import json, os\n"
                      f"names = ('TF_USE_LEGACY_KERAS', 'RANK_SIZE', 'RANK_ID')\n"
                      f"open({str(seen)!r}, 'w').write(json.dumps({{n: os.environ.get(n) for n in names}}))\n"
                      + ("raise RuntimeError('the script fails')\n" if ending == "raise" else ""))
    environment = dict(os.environ)
    assert run_script(str(script)) == (1 if ending == "raise" else 0)
    expected = {"TF_USE_LEGACY_KERAS": "1", "RANK_SIZE": "1", "RANK_ID": "0", **before}
    assert json.loads(seen.read_text()) == expected
    assert dict(os.environ) == environment


@pytest.mark.parametrize("source, local_module, expected", [
    ("from npu_bridge.npu_init import *\nimport tensorflow as tf\n", None, 1),  # every Ascend adapter script
    ("import tensorflow as tf\nsess = tf.Session()\n", None, 1),  # a name only TensorFlow 1 has
    ("import tensorflow as tf\nlayers = getattr(tf.contrib, 'layers')\n", None, 1),  # tf.contrib, however used
    ("import tensorflow as tf\nimport model\n", "import tensorflow as tf\nslim = tf.contrib.slim\n", 1),  # in a local module
    ("import tensorflow as tf\nest = tf.estimator.Estimator(model_fn)\nm = tf.saved_model.load('x')\n", None, 2),
    ("import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\nsess = tf.Session()\n", None, 2),
])
def test_each_script_gets_the_tensorflow_it_was_written_for(tmp_path, monkeypatch, source, local_module, expected):
    from npurun.tools.run import script_tf_api

    monkeypatch.delenv("NPURUN_TF_API", raising=False)
    script = tmp_path / "train.py"
    script.write_text(source)
    if local_module:
        (tmp_path / "model.py").write_text(local_module)
    assert script_tf_api(str(script)) == expected
    monkeypatch.setenv("NPURUN_TF_API", str(3 - expected))
    assert script_tf_api(str(script)) == 3 - expected, "NPURUN_TF_API forces the choice"
    monkeypatch.setenv("NPURUN_TF_API", "3")
    with pytest.raises(ValueError, match="NPURUN_TF_API='3'.*allowed"):
        script_tf_api(str(script))


def test_a_tensorflow_2_script_keeps_eager_tensorflow_2(tmp_path):
    script = tmp_path / "tf2.py"
    script.write_text(textwrap.dedent("""\
        import tensorflow as tf
        print("eager", tf.executing_eagerly(), "estimator", hasattr(tf.estimator, "Estimator"),
              "v2", hasattr(tf, "function") and not hasattr(tf, "Session"))
        print("keras", tf.keras.estimator.model_to_estimator.__module__,
              tf.compat.v1.keras.estimator.model_to_estimator.__name__)
        """))
    done = run_compat("run", script)
    assert done.returncode == 0, done.stderr
    # tf.keras is tf-keras under npurun run; its model_to_estimator (which needs tensorflow_estimator) is npurun's.
    assert done.stdout.strip().splitlines() == ["eager True estimator True v2 True",
                                                "keras npurun.tf_estimator.keras model_to_estimator_v1"]


def test_a_run_with_no_rank_environment_is_rank_0_of_1_as_ascend_1p_scripts_export(tmp_path, monkeypatch):
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "ranks.py"
    # ModelZoo style: the data loader shards by the bare environment variables
    script.write_text("import os, sys\nrank_size = int(os.getenv('RANK_SIZE'))\nrank_id = int(os.environ['RANK_ID'])\n"
                      "sys.exit(10 * rank_size + rank_id)\n")
    assert run_script(str(script)) == 10
    assert "RANK_SIZE" not in os.environ and "RANK_ID" not in os.environ, "an in-process run leaves no trace"
    monkeypatch.setenv("RANK_SIZE", "2")  # a launcher's (or the user's) settings are the script's
    monkeypatch.setenv("RANK_ID", "1")
    assert run_script(str(script)) == 21
    monkeypatch.delenv("RANK_SIZE")
    monkeypatch.delenv("RANK_ID")
    monkeypatch.setenv("TF_CONFIG", "{}")  # any rank environment: nothing is made up
    script.write_text("import os, sys\nsys.exit(3 if 'RANK_SIZE' in os.environ else 0)\n")
    assert run_script(str(script)) == 0


def test_device_ids_ascend_1p_scripts_read_bare_are_0_in_a_one_rank_run(tmp_path, monkeypatch):
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG", "ASCEND_DEVICE_ID", "DEVICE_ID",
                 "DEVICE_INDEX", "RANK_INDEX"):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "devices.py"
    # DeepFM/WideDeep: rank_id = int(os.getenv('ASCEND_DEVICE_ID')); others DEVICE_ID / DEVICE_INDEX; the server's
    # RANK_INDEX (`int(os.environ['RANK_INDEX'])`)
    script.write_text("import os, sys\nsys.exit(100 * int(os.getenv('ASCEND_DEVICE_ID')) + "
                      "10 * int(os.getenv('DEVICE_ID')) + int(os.environ['DEVICE_INDEX']) + "
                      "int(os.environ['RANK_INDEX']) + 1)\n")
    assert run_script(str(script)) == 1
    assert "RANK_INDEX" not in os.environ
    assert "DEVICE_ID" not in os.environ and "ASCEND_DEVICE_ID" not in os.environ, "an in-process run leaves no trace"
    monkeypatch.setenv("DEVICE_INDEX", "3")  # an explicit setting is kept
    assert run_script(str(script)) == 3 + 1
    monkeypatch.setenv("RANK_SIZE", "4")  # several ranks: npurun reads ASCEND_DEVICE_ID as the rank's device,
    monkeypatch.setenv("RANK_ID", "2")  # which is the launcher's to set
    script.write_text("import os, sys\nsys.exit(5 if 'ASCEND_DEVICE_ID' in os.environ or 'DEVICE_ID' in os.environ "
                      "else 0)\n")
    assert run_script(str(script)) == 0


def test_run_m_runs_a_module_as_python_m_does(tmp_path):
    # Albert_ID0632's launch script: `python3 -m albert.run_pretraining ...` from the model folder
    package = tmp_path / "albert"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "modeling.py").write_text("HIDDEN = 8\n")
    (package / "run_pretraining.py").write_text(
        "import sys\nfrom npu_bridge.npu_init import *\nfrom albert import modeling\nimport tensorflow as tf\n"
        "flags = tf.flags\nflags.DEFINE_integer('train_batch_size', 1, '')\nFLAGS = flags.FLAGS\n\n"
        "def main(_):\n    print('module', __name__, modeling.HIDDEN, FLAGS.train_batch_size, hasattr(tf, 'Session'))\n\n"
        "if __name__ == '__main__':\n    tf.app.run()\n")
    done = run_compat("run", "-m", "albert.run_pretraining", "--train_batch_size=32", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "module __main__ 8 32 True" in done.stdout
    missing = run_compat("run", "-m", "albert.no_such_module", cwd=tmp_path)
    assert missing.returncode == 2 and "no module named albert.no_such_module" in missing.stderr
