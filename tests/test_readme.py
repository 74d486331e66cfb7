"""The README's option table is generated from the option table in code; a stale copy fails."""
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_option_table_is_current():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "update_readme.py"), "--check"])
    assert result.returncode == 0, "README.md option table is stale: run python scripts/update_readme.py"


def test_readme_keeps_the_two_setup_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/dev example" in text
    assert "bash scripts/dev test" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/dev test" in ci


def _section(text, title):
    start = text.index(f"## {title}")
    end = text.index("\n## ", start + 1)
    return text[start:end]


@pytest.mark.slow
def test_quickstart_runs_as_written(tmp_path, monkeypatch, capsys):
    quickstart = _section((ROOT / "README.md").read_text(encoding="utf-8"), "Quickstart")
    code = re.search(r"```python\n(.*?)```", quickstart, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md#quickstart", "exec"), {"__name__": "__readme__"})
    import numpy as np

    printed = eval(capsys.readouterr().out.strip().splitlines()[-1], {"np": np})
    assert printed["global_step"] == 200 and printed["accuracy"] > 0.9
    assert (tmp_path / "quickstart_model" / "checkpoint").exists()


def test_quickstart_shows_the_error_as_it_is_printed():
    from npurun import NPURunConfig

    quickstart = _section((ROOT / "README.md").read_text(encoding="utf-8"), "Quickstart")
    shown = re.search(r">>> NPURunConfig\(iterations_per_loop=0\)\n(.*)\n", quickstart).group(1)
    with pytest.raises(ValueError) as info:
        NPURunConfig(iterations_per_loop=0)
    assert shown == f"{type(info.value).__name__}: {info.value}"
