"""The README's option table is generated from the option table in code; a stale copy fails."""
import pathlib
import subprocess
import sys

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
