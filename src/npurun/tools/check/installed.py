"""Names that an installed third-party module no longer has (`scipy.misc.imresize`, `PIL.Image.ANTIALIAS`),
found in its source on disk: nothing is imported.

A script's `from scipy import misc; misc.imresize(...)` raised AttributeError once SciPy removed it (1.3);
the module is installed, so the import check passes. For a module under site-packages whose source
is a plain `.py` file, the names it binds at its top level (through if/try blocks, imports and star
imports of its own `.py` submodules, and its subpackages on disk) are compared with the attribute a
script reads. A module that makes names at run time (a module `__getattr__`, `globals()`, `sys.modules`
tricks, `exec`, lazy loaders) or star-imports a compiled module is not judged: no finding.
"""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
from functools import lru_cache

from .module_names import _module_level_names

_MAX_SOURCE = 2 * 1024 * 1024
_DYNAMIC = ("__getattr__", "globals()", "sys.modules[", "setattr(", "exec(", "lazy_loader", "lazy.attach",
            "vars()", "__dict__.update", "_LazyModule", "LazyModule")
_MAX_DEPTH = 4
# Removals the source cannot show (the module makes its names at run time): name -> (distribution, the version
# that removed it, what replaced it). Pillow 10 sets its constants from enums with setattr; scikit-image 0.19
# loads lazily.
KNOWN_REMOVED = {
    "PIL.Image.ANTIALIAS": ("Pillow", (10,), "Image.LANCZOS"),
    "PIL.Image.LINEAR": ("Pillow", (10,), "Image.BILINEAR"),
    "PIL.Image.CUBIC": ("Pillow", (10,), "Image.BICUBIC"),
    **{f"skimage.measure.compare_{name}": ("scikit-image", (0, 19), f"skimage.metrics.{new}")
       for name, new in (("ssim", "structural_similarity"), ("psnr", "peak_signal_noise_ratio"),
                         ("mse", "mean_squared_error"), ("nrmse", "normalized_root_mse"))},
}


@lru_cache(maxsize=None)
def _spec_file(dotted: str):
    """(source file, is_package) of an installed module under site-packages, or None (not found, compiled,
    the standard library, not a plain file)."""
    top, *rest = dotted.split(".")
    try:
        spec = importlib.util.find_spec(top)  # locates the top-level package only: nothing runs
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    origin = os.path.realpath(spec.origin)
    if os.sep + "site-packages" + os.sep not in origin and os.sep + "dist-packages" + os.sep not in origin:
        return None
    locations = list(spec.submodule_search_locations or ())
    if not locations and os.path.basename(origin) == "__init__.py":
        # a package handed over by a shim's loader: setuptools' `distutils` (its distutils-precedence.pth
        # hook) is setuptools/_distutils, whose spec lists no search locations until it is loaded
        locations = [os.path.dirname(origin)]
    if not rest:
        return (origin, bool(locations)) if origin.endswith(".py") else None
    if not locations:
        return None
    base = os.path.join(locations[0], *rest)
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py"), True
    if os.path.isfile(base + ".py"):
        return base + ".py", False
    return None


def _is_submodule(dotted: str) -> bool:
    """Whether `dotted` is a module file or package on disk (any kind: .py, compiled, namespace directory)."""
    parent, _, leaf = dotted.rpartition(".")
    found = _spec_file(parent) if parent else None
    if found is None or not found[1]:
        return False
    folder = os.path.dirname(found[0])
    if os.path.isdir(os.path.join(folder, leaf)) or os.path.isfile(os.path.join(folder, leaf + ".py")):
        return True
    try:
        return any(entry.startswith(leaf + ".") and entry.endswith((".so", ".pyd")) for entry in os.listdir(folder))
    except OSError:
        return False


def not_a_package(dotted: str):
    """For an imported module path (`scipy.sparse.linalg.eigen.arpack`): (module, why) when a part of it is an
    installed plain module, not a package, so nothing below it can be imported, else None.

    SciPy 1.8 turned its private subpackages into deprecation shims (`scipy/sparse/linalg/eigen.py`): a
    module's `__getattr__` can still give old names, but the import system needs a package to go further
    (ModuleNotFoundError: "'scipy.sparse.linalg.eigen' is not a package")."""
    parts = dotted.split(".")
    for index in range(2, len(parts)):
        found = _spec_file(".".join(parts[:index]))
        if found is None:
            return None  # not a plain installed file (absent, compiled, a namespace): not judged
        if not found[1]:
            module = ".".join(parts[:index])
            return (module, f"the installed {_distribution(parts[0])} has {module} as a plain module, not a "
                            f"package, so {dotted} cannot be imported: ModuleNotFoundError (on Ascend too with "
                            f"this version of it)")
    return None


@lru_cache(maxsize=None)
def module_names(dotted: str, depth: int = 0):
    """The names installed module `dotted` binds at its top level, or None when that cannot be told statically."""
    found = _spec_file(dotted)
    if found is None or depth > _MAX_DEPTH:
        return None
    path, is_package = found
    try:
        if os.path.getsize(path) > _MAX_SOURCE:
            return None
        with open(path, "rb") as handle:
            source = handle.read().decode("utf-8", "replace")
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if any(marker in source for marker in _DYNAMIC):
        return None
    names, all_names = _module_level_names(tree.body)
    package = dotted if is_package else dotted.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            more = module_names(target, depth + 1) if target else None
            if more is None:
                return None  # a star import of something not read here (compiled, elsewhere)
            names |= {name for name in more if not name.startswith("_")}
    if all_names is not None:
        names |= set(all_names)
    return frozenset(names)


@lru_cache(maxsize=None)
def _distribution(top: str) -> str:
    try:
        for dist in importlib.metadata.packages_distributions().get(top, []):
            return f"{dist} {importlib.metadata.version(dist)}"
    except Exception:  # metadata of other packages may be malformed: only the message loses its version
        pass
    return top


def _version(dist: str):
    try:
        text = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts), text


@lru_cache(maxsize=None)
def _expired(dotted: str) -> dict:
    """A module-level `__getattr__` module's literal `__expired_attributes__` (NumPy 2's removed names ->
    why), read from its source or the sibling module it imports the dict from; {} if none."""
    found = _spec_file(dotted)
    if found is None:
        return {}
    try:
        tree = ast.parse(open(found[0], "rb").read().decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    package = dotted if found[1] else dotted.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__expired_attributes__"
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return {}
            return value if isinstance(value, dict) else {}
        if (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
                and any(alias.name == "__expired_attributes__" and not alias.asname for alias in node.names)):
            return _expired(f"{package}.{node.module}") if f"{package}.{node.module}" != dotted else {}
    return {}


def missing_attribute(qualified: str):
    """For `qualified` (`scipy.misc.imresize`): (module, attribute, why) when the installed module has no such
    top-level name, else None (present, a submodule, not installed, or not told statically)."""
    parts = qualified.split(".")
    if _spec_file(parts[0]) is None:
        return None
    index = 1
    while index < len(parts) and _is_submodule(".".join(parts[:index + 1])):
        index += 1
    if index >= len(parts):
        return None
    module, attribute = ".".join(parts[:index]), parts[index]
    if attribute.startswith("__"):
        return None
    known = KNOWN_REMOVED.get(f"{module}.{attribute}")
    if known is not None:
        dist, removed, instead = known
        installed = _version(dist)
        if installed is not None and installed[0] >= removed:
            return (module, attribute, f"the installed {dist} {installed[1]} has no {module}.{attribute} (removed in "
                                       f"{'.'.join(map(str, removed))}; use {instead}): AttributeError / ImportError "
                                       f"when that line runs (on Ascend too with this version of it)")
        return None
    from ...tf1.world import numpy_names_provided

    if module == "numpy" and attribute in numpy_names_provided():
        return None  # npurun run's TF1 world gives TF 1.15's NumPy names back (tf1/world.py)
    expired = _expired(module)
    if isinstance(expired.get(attribute), str):
        return (module, attribute, f"the installed {_distribution(parts[0])} has no {module}.{attribute}: "
                                   f"{expired[attribute].strip()} (AttributeError when that line runs)")
    names = module_names(module)
    if names is None or attribute in names:
        return None
    return (module, attribute, f"the installed {_distribution(parts[0])} has no {module}.{attribute} (read in its "
                               f"source, nothing imported): AttributeError / ImportError when that line runs; "
                               f"removed from the package (on Ascend too with this version of it)")


def _definition(qualified: str, depth: int = 0):
    """The `def` / `class` node of installed `qualified` (`sklearn.manifold.TSNE`), followed through the
    package's own re-exports (`from ._t_sne import TSNE`), or None when it cannot be told from the source."""
    parts = qualified.split(".")
    if depth > _MAX_DEPTH or _spec_file(parts[0]) is None:
        return None
    index = 1
    while index < len(parts) and _is_submodule(".".join(parts[:index + 1])):
        index += 1
    if index != len(parts) - 1:
        return None
    module, name = ".".join(parts[:index]), parts[index]
    found = _spec_file(module)
    if found is None:
        return None
    try:
        if os.path.getsize(found[0]) > _MAX_SOURCE:
            return None
        with open(found[0], "rb") as handle:
            tree = ast.parse(handle.read().decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    package = module if found[1] else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name and alias.name != "*":
                    base = package.split(".")
                    if node.level:
                        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                        target = ".".join([*base, *([node.module] if node.module else [])])
                    else:
                        target = node.module or ""
                    return _definition(f"{target}.{alias.name}", depth + 1) if target else None
    return None


def _parameters(node):
    """The keyword names a def (or a class's own `__init__`) accepts, or None if it takes **kwargs / cannot tell."""
    if isinstance(node, ast.ClassDef):
        node = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if node is None:
            return None  # inherited: not followed
    if node.args.kwarg is not None:
        return None
    return {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}


def unknown_keywords(qualified: str, keywords) -> tuple:
    """(keywords the installed `qualified` does not take, why) for a call with those keyword names, else ()."""
    keywords = [k for k in keywords if k]
    if not keywords or "." not in qualified:
        return ()
    node = _definition(qualified)
    accepted = _parameters(node) if node is not None else None
    if accepted is None:
        return ()
    unknown = [k for k in keywords if k not in accepted]
    if not unknown:
        return ()
    shown = ", ".join(f"{k}=" for k in unknown)
    return (unknown, f"the installed {_distribution(qualified.split('.')[0])}'s {qualified}() takes no {shown} "
                     f"(read in its source, nothing imported): TypeError when that line runs; the keyword was "
                     f"removed or renamed (on Ascend too with this version of it)")
