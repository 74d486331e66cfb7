"""Every ```python block of docs/tf_estimator.md runs as it stands."""
import pathlib
import re
import sys
import warnings

import pytest

import npurun.compat as compat

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "tf_estimator.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("code", BLOCK.findall(DOC.read_text(encoding="utf-8")))
def test_tf_estimator_doc_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    sys.modules.pop("npurun.estimator_api", None)  # `import npurun.estimator_api` attaches as in a fresh process
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    finally:
        compat.deactivate()
        if "npurun.estimator_api" in sys.modules:
            sys.modules.pop("npurun.estimator_api").detach()
