"""Every ```python block of docs/estimator.md runs as it stands."""
import pathlib
import re
import warnings

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "estimator.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("code", BLOCK.findall(DOC.read_text(encoding="utf-8")))
def test_estimator_doc_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
