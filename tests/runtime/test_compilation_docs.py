"""Every ```python block of docs/compilation.md runs as it stands, in an empty directory."""
import pathlib
import re
import warnings

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "compilation.md"
BLOCKS = re.compile(r"```python\n(.*?)```", re.S).findall(DOC.read_text(encoding="utf-8"))


def test_the_doc_has_examples():
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS)
def test_compilation_doc_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    if '"xla_model"' in code:  # the Estimator example; the dynamic-inputs one checks its output itself
        assert list(tmp_path.glob("xla_model/events.out.tfevents.*")), "the example trained and wrote summaries"
