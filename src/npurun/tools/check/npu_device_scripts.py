"""Whether a script is TensorFlow 2 code of the adapter's `npu_device` package (it, or a local module next to it
that it imports, imports `npu_device`): `npurun run` keeps TensorFlow 2's API for such scripts, and `npurun
check` looks their TensorFlow names up there. Read with `ast`; nothing is imported."""
from __future__ import annotations

import ast
import os

from ..script_guard import ScriptRefused, parse_within_limits, read_script

TF_API_ENV = "NPURUN_TF_API"  # 1 or 2 forces the TensorFlow API a script gets (see npurun.tools.run)


def imported_modules(path: str) -> list:
    """The modules the file at `path` imports (`import a.b` -> "a.b", `from a import b` -> "a")."""
    tree = parse_within_limits(read_script(path)[0], path)
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    return modules + [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]


def imports_npu_device(path: str, seen=None) -> bool:
    """Whether the script or a local module it imports (next to it) imports `npu_device`, the adapter's
    TensorFlow 2 package: such scripts are TensorFlow 2 code (`npu_device.compat.enable_v1()` switches to
    TensorFlow 1 behaviour where they ask for it). SyntaxError / ScriptRefused / OSError propagate."""
    seen = set() if seen is None else seen
    seen.add(path)
    modules = imported_modules(path)
    if any(module.partition(".")[0] == "npu_device" for module in modules):
        return True
    here = os.path.dirname(path)
    for module in modules:
        local = os.path.join(here, *module.split(".")) + ".py"
        if local not in seen and os.path.isfile(local):
            try:
                if imports_npu_device(local, seen):
                    return True
            except (SyntaxError, ScriptRefused, OSError):
                continue  # a local module that cannot be read does not decide
    return False


def tensorflow2_script(path: str) -> bool:
    """Whether `npurun run` keeps TensorFlow 2's API for the script (NPURUN_TF_API decides when set)."""
    forced = os.environ.get(TF_API_ENV, "").strip()
    if forced in ("1", "2"):
        return forced == "2"
    try:
        return os.path.isfile(path) and imports_npu_device(path)
    except (SyntaxError, ScriptRefused, OSError, ValueError):
        return False
