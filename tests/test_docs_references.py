"""The docs say what the code does: every test file a doc cites exists, and no doc calls an option
"not implemented yet" that the option table marks as having an effect."""
import pathlib
import re

from npurun.config import OPTIONS

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def test_every_cited_test_file_exists():
    missing = []
    for doc in DOCS:
        for cited in re.findall(r"`(tests/[\w/]+\.py)`", doc.read_text(encoding="utf-8")):
            if not (ROOT / cited).is_file():
                missing.append(f"{doc.name}: {cited}")
    assert missing == []


def test_no_doc_row_calls_an_effect_option_not_implemented():
    wrong = []
    for doc in DOCS:
        for line in doc.read_text(encoding="utf-8").splitlines():
            if not line.startswith("|") or "not implemented yet" not in line:
                continue
            named = re.findall(r"`(\w+)`", line.split("|")[1])
            wrong += [f"{doc.name}: {name}" for name in named
                      if name in OPTIONS and OPTIONS[name].status.startswith("effect")]
    assert wrong == []
