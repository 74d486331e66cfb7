"""The names a module binds at its top level, read from its `ast` (for a script's local modules and for the
installed modules `npurun check` looks names up in, `installed.py`)."""
from __future__ import annotations

import ast

from .options import literal


def _target_names(target):
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _module_level_names(body):
    """The names a module binds at its top level (through if/try/for/with blocks, not inside functions or
    classes), and its literal `__all__` (None if it has none or it is not a literal list of strings)."""
    names, all_names = set(), None
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                names.update(_target_names(target))
                if isinstance(target, ast.Name) and target.id == "__all__":
                    try:
                        value = literal(statement.value) if statement.value is not None else None
                    except (ValueError, TypeError, SyntaxError):
                        value = None
                    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                        all_names = list(value)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            for target in ([statement.target] if isinstance(statement, (ast.For, ast.AsyncFor))
                           else [item.optional_vars for item in statement.items if item.optional_vars]):
                names.update(_target_names(target))
        for block in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = getattr(statement, block, None)
                if inner:
                    more, more_all = _module_level_names(
                        [s for h in inner for s in (h.body if isinstance(h, ast.ExceptHandler) else [h])])
                    names |= more
                    all_names = more_all if more_all is not None else all_names
    return names, all_names
