"""Every ```python block of docs/tf_estimator.md runs as it stands."""
import pathlib
import re
import warnings

import pytest

import npurun.compat as compat

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "tf_estimator.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("code", BLOCK.findall(DOC.read_text(encoding="utf-8")))
def test_tf_estimator_doc_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    finally:
        compat.deactivate()
