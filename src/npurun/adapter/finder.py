"""The import hook: while active, `npu_bridge...` and `hccl...` imports resolve to modules built from
the coverage table (`tables.MODULES`), and TensorFlow gets what Ascend scripts expect of it.

Nothing is installed under those names: the modules exist only in `sys.modules` while the finder is
on `sys.meta_path`, and `uninstall()` removes them again.

A module's names are resolved when first read (`from m import name`, `m.name`, or `import *`):

- a mapped name gives the npurun / TensorFlow object itself;
- an unsupported name, or a mapped name whose npurun target is not available yet, gives a
  placeholder that raises `AdapterAPIError` (naming it and why) on any use: calling it, reading an
  attribute, subclassing it, `isinstance` against it. Scripts that only import it still load;
- importing a module the table marks unsupported, or one it does not list, raises the same error.
"""
from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

from ..names.coverage import AdapterAPIError, is_placeholder, materialize, placeholder  # noqa: F401
from . import tables


class CompatModule(types.ModuleType):
    """An adapter module whose names come from the coverage table, resolved on first read."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        table = tables.MODULES[self.__name__]
        entry = table.names.get(name)
        if entry is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}: npurun's compatibility "
                                 f"layer does not provide it (it is not in the coverage table, docs/compat.md)")
        if "tensorflow" not in sys.modules and getattr(entry, "target", "npurun.config").partition(":")[0] not in (
                "npurun.config",):
            # TensorFlow first, so its adjustments (the watch callback: npurun.util's NPUSession is to subclass
            # TensorFlow's own Session, made before tf.compat.v1.Session is replaced) are done before the npurun
            # module behind the name starts. `from npu_bridge.estimator.npu.npu_optimizer import
            # NPUDistributedOptimizer` before any `import tensorflow` (Vega's optim.py, in a dask worker) would
            # otherwise import TensorFlow from inside a half-run npurun.distribute.optimizer. npurun.config's
            # names (NPURunConfig) need no TensorFlow; unsupported names neither.
            import tensorflow  # noqa: F401
        value = materialize(self.__name__, name, entry)
        if not is_placeholder(value):  # placeholders re-resolve on use; keep asking the table
            self.__dict__[name] = value
        return value

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(tables.MODULES[self.__name__].names))


class _CompatLoader(importlib.abc.Loader):
    def create_module(self, spec):
        table = tables.MODULES.get(spec.name)
        if table is None:
            entry = tables.unsupported_module(spec.name)
            if entry is not None:
                raise AdapterAPIError(f"{spec.name} is not supported by npurun: {entry.why}", name=spec.name)
            raise AdapterAPIError(f"{spec.name} is not provided by npurun's compatibility layer: it is not in the "
                                  f"coverage table (docs/compat.md)", name=spec.name)
        module = CompatModule(spec.name, table.doc)
        if not table.package:
            module.__all__ = list(table.names)
        module.__npurun_compat__ = True
        return module

    def exec_module(self, module):
        pass


class _AfterImportLoader(importlib.abc.Loader):
    """Runs the real loader, then `callback(module)`: how TensorFlow is adjusted when it is imported."""

    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._callback(module)


class CompatFinder(importlib.abc.MetaPathFinder):
    """The `sys.meta_path` entry of the compatibility layer.

    `watch` maps module names to callbacks `callback(module)`, called once that module has been
    imported (at once for those already imported): how TensorFlow is adjusted.
    """

    def __init__(self, watch=None):
        self._loader = _CompatLoader()
        self._watch = dict(watch or {})
        self._seen: set = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in tables.ROOTS:
            table = tables.MODULES.get(fullname)
            return importlib.machinery.ModuleSpec(fullname, self._loader, origin="npurun.compat",
                                                  is_package=bool(table and table.package))
        if fullname in self._watch and fullname not in self._seen:
            return self._watched_spec(fullname, path, target)
        return None

    def _watched_spec(self, fullname, path, target):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _AfterImportLoader(spec.loader, functools.partial(self._imported, fullname))
                return spec
        return None

    def _imported(self, fullname, module):
        self._seen.add(fullname)
        # A module may replace itself in sys.modules while it runs (TensorFlow installs wrappers).
        self._watch[fullname](sys.modules.get(fullname, module))

    def install(self):
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        for fullname in self._watch:
            if fullname in sys.modules and fullname not in self._seen:
                self._imported(fullname, sys.modules[fullname])

    def uninstall(self):
        while self in sys.meta_path:
            sys.meta_path.remove(self)
        for name in list(sys.modules):
            if name.split(".")[0] in tables.ROOTS and getattr(sys.modules[name], "__npurun_compat__", False):
                del sys.modules[name]
        self._seen.clear()
