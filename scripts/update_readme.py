"""Regenerate the README's option table from the option table in code.

    python scripts/update_readme.py          # rewrite README.md in place
    python scripts/update_readme.py --check  # exit 1 when README.md is stale
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))
from npurun.cli.explain import markdown_table  # noqa: E402

START, END = "<!-- options:start -->", "<!-- options:end -->"
README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def rendered(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{markdown_table()}\n{END}{tail}"


if __name__ == "__main__":
    current = README.read_text(encoding="utf-8")
    fresh = rendered(current)
    if "--check" in sys.argv:
        sys.exit(0 if fresh == current else 1)
    README.write_text(fresh, encoding="utf-8")
