"""`npurun migrate` / `npurun check` refuse scripts past a size or nesting limit, and unreadable ones,
with one sentence (issue 27: a 16 KB `x = 1+1+...` of 8000 terms ran 75 s in libcst and then
crashed the interpreter; a non-UTF-8 script was a UnicodeDecodeError traceback; check quoted the
content of any file a script named)."""
import pytest

from npurun.cli import main
from npurun.tools import script_guard
from npurun.tools.migrate import migrate_source


def run(argv, capsys):
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("source", [
    "x = " + "+".join(["1"] * 8000) + "\n",      # Python's parser gives up (RecursionError)
    "x = " + "+".join(["1"] * 150) + "\n",       # parses; 151 levels deep
    "def f():\n    return " + "g(" * 120 + ")" * 120 + "\n",
])
@pytest.mark.parametrize("command", ["migrate", "check"])
def test_deeply_nested_scripts_are_refused_in_one_sentence(tmp_path, capsys, source, command):
    script = tmp_path / "deep.py"
    script.write_text(source)
    assert len(source) < 20000
    status, out, err = run([command, str(script)], capsys)
    assert status == 2 and out == ""
    assert "nest" in err and str(script) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_oversized_scripts_are_refused(tmp_path, capsys):
    script = tmp_path / "big.py"
    script.write_text("x = 1\n" * (script_guard.SCRIPT_LIMIT // 6 + 10))
    for command in ("migrate", "check"):
        status, _, err = run([command, str(script)], capsys)
        assert status == 2 and "larger than" in err


@pytest.mark.parametrize("content, problem", [(b"x = '\xff'\n", "not Python source text"),
                                              (b"# -*- coding: nope -*-\nx = 1\n", "not Python source text"),
                                              (b"x = 1\0\n", "null bytes")])
@pytest.mark.parametrize("command", ["migrate", "check"])
def test_undecodable_scripts_are_one_paragraph(tmp_path, capsys, content, problem, command):
    script = tmp_path / "bad.py"
    script.write_bytes(content)
    status, _, err = run([command, str(script)], capsys)
    assert status == 2 and problem in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_declared_encoding_is_honoured(tmp_path, capsys):
    script = tmp_path / "latin.py"
    script.write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9'\n")
    status, _, err = run(["check", str(script)], capsys)
    assert status == 0, err


def test_ordinary_nesting_still_migrates():
    source = "import tensorflow as tf\nconfig = tf.estimator.RunConfig(model_dir=" + "str(" * 40 + "'m'" + \
             ")" * 40 + ")\n"
    assert "NPURunConfig" in migrate_source(source).migrated


def test_migrate_source_is_guarded_too():
    with pytest.raises(script_guard.ScriptRefused, match="levels"):
        migrate_source("x = " + "-" * 300 + "1\n")


def test_check_does_not_quote_a_file_that_is_not_of_the_format(tmp_path, capsys):
    secret = tmp_path / "shadow"
    secret.write_text("s3cr3tuser:*:19000:0:99999:7:::\nOtherUser=s3cr3t\n")
    script = tmp_path / "train.py"
    script.write_text(
        "from npu_bridge.estimator.npu.npu_config import NPURunConfig\n"
        f"config = NPURunConfig(precision_mode='allow_mix_precision', modify_mixlist={str(secret)!r},\n"
        f"                      op_precision_mode={str(secret)!r}, fusion_switch_file={str(secret)!r})\n")
    status, out, err = run(["check", str(script)], capsys)
    assert status == 1, err
    assert out.count("not a ") >= 3
    for fragment in ("s3cr3t", "99999", "OtherUser"):
        assert fragment not in out.replace(str(secret), "")


def test_check_refuses_a_huge_file_without_reading_it(tmp_path, capsys):
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as handle:
        handle.truncate(3 * 1024 ** 3)
    script = tmp_path / "train.py"
    script.write_text("from npu_bridge.estimator.npu.npu_config import NPURunConfig\n"
                      f"config = NPURunConfig(precision_mode='allow_mix_precision', modify_mixlist={str(sparse)!r})\n")
    status, out, err = run(["check", str(script)], capsys)
    assert status == 1 and "3221225472 bytes" in out and "Traceback" not in err


def test_migrate_in_place_keeps_the_declared_encoding(tmp_path, capsys):
    script = tmp_path / "latin.py"
    script.write_bytes(b'# -*- coding: latin-1 -*-\nimport tensorflow as tf\nname = "\xe9"\n'
                       b'c = tf.estimator.RunConfig(model_dir="m")\n')
    status, _, err = run(["migrate", str(script), "--in-place"], capsys)
    assert status == 0, err
    data = script.read_bytes()
    assert b"NPURunConfig" in data and b'"\xe9"' in data  # still latin-1, as its cookie says
