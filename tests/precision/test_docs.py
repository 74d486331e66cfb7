"""docs/precision.md: its example runs, and its op-name table is the one the code uses."""
import pathlib
import re

from npurun.precision.op_names import ASCEND_TO_TF

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "precision.md"


def test_doc_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    assert "[np.float32(32768.0), np.int64(0)]" in capsys.readouterr().out


def test_published_op_name_table_matches_the_code():
    rows = re.findall(r"^\| `([^`]+)` \| (`.*`) \|$", DOC.read_text(encoding="utf-8"), re.M)
    published = {ascend: tuple(re.findall(r"`([^`]+)`", targets)) for ascend, targets in rows}
    assert published == ASCEND_TO_TF
