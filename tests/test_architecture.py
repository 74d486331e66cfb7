"""The import graph of src/npurun: lower layers never import higher ones, and there are no circles.

Every `import` / `from ... import` naming npurun counts, at module level or inside a function (a
lazy import is still an arrow); only those under `if TYPE_CHECKING:` are left out. The layers are
README's "Layout" table, low to high. A package's modules share its layer, except the modules that
register a room's `npurun` subcommands (`<room>/cli.py`) and `__main__` modules, which belong to
the CLI layer: they may import `npurun.cli.help`, and nothing in the library imports them.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "npurun"

# Low to high; a module may import modules of its own layer or lower ones.
LAYERS = (
    ("config", "logs", "_native_stderr", "preemption", "reporting", "names", "safe_files"),  # plain Python foundations
    ("debug",),
    ("distribute",),
    ("precision",),
    ("runtime",),
    ("estimator",),
    ("util", "example"),
    ("tf1",),
    ("tf_estimator", "estimator_api"),
    ("adapter",),
    ("tools", "compat"),
    ("cli", "", "__main__"),  # "": the package's own __init__ (its public names, loaded lazily); __main__: `python -m npurun`
)
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}
CLI_RANK = RANK["cli"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    parts = module.split(".")
    if parts[-1] in ("cli", "__main__") and len(parts) > 2:
        return CLI_RANK  # a room's subcommands, or `python -m` entry points
    room = parts[1] if len(parts) > 1 else ""
    if room not in RANK:
        raise AssertionError(f"{module}: its room {room!r} has no layer in tests/test_architecture.py (add it to "
                             f"LAYERS and to README's Layout table)")
    return RANK[room]


def _type_checking_only(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(inner) for inner in ast.walk(node))
    return ids


def _resolve(target: str) -> str | None:
    """The npurun module an import of `target` loads (itself, or the package it is a name of)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def imports_of(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_only(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{alias.name}" for alias in node.names] or [prefix]
        else:
            continue
        for target in targets:
            if target.split(".")[0] != "npurun":
                continue
            resolved = _resolve(target)
            if resolved and resolved != module:
                found.add(resolved)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return result


def test_the_graph_is_read():
    # The checks below mean something only if the graph has the arrows we know exist.
    assert "npurun.estimator.spec_checks" in GRAPH["npurun.estimator.spec"]
    assert "npurun.distribute.optimizer" in GRAPH["npurun.precision.optimizer"]
    assert sum(len(targets) for targets in GRAPH.values()) > 300


def test_no_lower_layer_imports_a_higher_one():
    upward = [f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
              for module, targets in sorted(GRAPH.items()) for target in sorted(targets)
              if layer(target) > layer(module)]
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_import_circles():
    cycles = _cycles(GRAPH)
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_no_library_module_imports_the_cli():
    offenders = [f"{module} imports {target}" for module, targets in sorted(GRAPH.items())
                 for target in sorted(targets)
                 if target.startswith("npurun.cli") and layer(module) < CLI_RANK]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert _cycles(graph) == expected


def test_a_room_without_a_layer_is_an_error():
    with pytest.raises(AssertionError, match="has no layer"):
        layer("npurun.newroom.module")
