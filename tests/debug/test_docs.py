"""Every ```python block of docs/debug.md runs as it stands, in an empty directory."""
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "debug.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
BLOCKS = BLOCK.findall(DOC.read_text(encoding="utf-8"))


def test_there_is_an_example_per_feature():
    text = "\n".join(BLOCKS)
    for feature in ("enable_dump=True", "enable_dump_debug=True", '"training_trace": "on"', '"task_trace": "on"',
                    "enable_exception_dump=1", '"dump", "compare"'):
        assert feature in text


@pytest.mark.parametrize("code", [pytest.param(code, id=f"debug.md#{i}") for i, code in enumerate(BLOCKS)])
def test_doc_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<debug.md>", "exec"), {"__name__": "__doc_example__"})
