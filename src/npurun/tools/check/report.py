"""The report of `npurun check`: one `Finding` per thing a script uses, printed as text or JSON.

`check.py` collects the findings (scanning the script and its local modules); this module only
holds their record type and how they are shown.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Finding:
    line: int
    section: str  # "option", "parameter_map", "adapter", "tensorflow", "horovod", "imports", "installed", "names"
    name: str
    status: str
    detail: str
    error: bool = False
    file: str = ""  # "" for the script itself, else the local module's path relative to the script's directory


SECTIONS = (("option", "NPURunConfig / RunConfig options"),
            ("parameter_map", "NpuOptimizer parameter_map entries"),
            ("adapter", "Ascend adapter APIs"),
            ("tensorflow", "TensorFlow APIs that TensorFlow 2.21 lacks"),
            ("horovod", "Horovod"),
            ("installed", "Names installed packages no longer have"),
            ("imports", "Other imports"),
            ("names", "Names read where nothing defines them"))


def render_text(findings, filename: str) -> str:
    lines = [f"npurun check: {filename}"]
    for section, title in SECTIONS:
        rows = [f for f in findings if f.section == section]
        if not rows:
            continue
        lines.append("")
        lines.append(f"{title}:")
        for f in rows:
            mark = "!" if f.error else " "
            where = f"{f.file} line {f.line}" if f.file else f"line {f.line}"
            lines.append(f" {mark} {where}: {f.name} -- {f.status}: {f.detail}")
    errors = [f for f in findings if f.error]
    lines.append("")
    lines.append(f"{len(findings)} finding(s); {len(errors)} will raise here" + (
        " (marked !)" if errors else ""))
    return "\n".join(lines)


def render_json(findings, filename: str) -> str:
    return json.dumps({"script": filename, "findings": [asdict(f) for f in findings]}, indent=2)
