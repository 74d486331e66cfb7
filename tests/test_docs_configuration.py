"""Every ```python block of the listed docs runs as it stands."""
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
RUNNABLE = ["configuration.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    for name in RUNNABLE:
        for index, code in enumerate(BLOCK.findall((DOCS / name).read_text(encoding="utf-8"))):
            yield pytest.param(code, id=f"{name}#{index}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_doc_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})
