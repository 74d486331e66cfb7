"""docs/compilation.md, dynamic_graph_execute_mode: the example runs in a fresh process (the
compilation cache it counts with is a process-wide flag) and prints what the page shows."""
import pathlib
import re

from helpers import run_python

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "compilation.md"


def test_execute_mode_example_prints_what_the_page_shows():
    section = DOC.read_text(encoding="utf-8").split("### dynamic_graph_execute_mode", 1)[1]
    code, shown = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", section, re.S).groups()
    printed = [line for line in run_python(code).stdout.splitlines() if "compilation(s)" in line]
    assert printed == shown.splitlines()
    assert printed[0].startswith("dynamic_execute: 1 compilation(s)")
    assert printed[1].startswith("lazy_recompile: 3 compilation(s)")
