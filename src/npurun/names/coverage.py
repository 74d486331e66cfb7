"""Coverage tables: how npurun publishes itself under other packages' names, and what each name is here.

This is the machinery shared by every room that answers for another package's names: the Ascend
adapters (`npurun.adapter`: `npu_bridge`, `hccl`), TensorFlow 1's world (`npurun.tf1`: `tf.contrib`,
moved TF 1.15 paths) and `tf.estimator` for TensorFlow 2.16+ (`npurun.tf_estimator`). The tables
themselves live in those rooms; this module holds only their types and how an entry is resolved,
so it sits at the bottom of the import graph (plain Python; it imports no TensorFlow and nothing of
npurun).

Each module of a table maps its names to one of:

- `Mapped(target)`: the name is the npurun (or TensorFlow) object at `target`, given as
  `"package.module:attribute"` or, for a whole module, `"package.module"`. Targets are resolved by
  name when first used, so a target that this installation does not provide yet raises
  `AdapterAPIError` naming the adapter name and the missing target.
- `NoEffect(target, why)`: implemented by `target`, which does what the name means on a CPU/GPU;
  that is nothing observable, so the first use warns (`UserWarning`) with `why`.
- `Unsupported(why)`: cannot work here; any use (call, attribute, subclass, import of the module)
  raises `AdapterAPIError` naming it and saying why.

`docs/compat.md` is generated from the tables by `npurun.tools.compat_docs.render_markdown()` (a test
keeps it current: `python -m npurun.compat docs > docs/compat.md`).
"""
from __future__ import annotations

import functools
import importlib
import warnings
from dataclasses import dataclass, field
from typing import Mapping, Union


class AdapterAPIError(ImportError, NotImplementedError):
    """An adapter name that cannot work here, or whose npurun target is not available.

    It is an ImportError (raised when such a module is imported) and a NotImplementedError (raised
    when such a name is used).
    """


@dataclass(frozen=True)
class Mapped:
    target: str
    note: str = ""
    status = "mapped"


@dataclass(frozen=True)
class NoEffect:
    target: str
    why: str
    status = "accepted, no effect here"


@dataclass(frozen=True)
class Unsupported:
    why: str
    status = "unsupported"


Entry = Union[Mapped, NoEffect, Unsupported]


@dataclass(frozen=True)
class AdapterModule:
    """One module of the adapter: its names, and whether it is a package (has submodules)."""

    name: str
    doc: str
    names: Mapping[str, Entry] = field(default_factory=dict)
    package: bool = False


def split_target(target: str) -> tuple[str, str | None]:
    module, _, attribute = target.partition(":")
    return module, attribute or None


def _is_part_of(missing: ModuleNotFoundError, module_name: str) -> bool:
    """Whether a ModuleNotFoundError is about `module_name` itself, a parent, or a module inside it."""
    name = missing.name or ""
    return bool(name) and (name == module_name or module_name.startswith(name + ".")
                           or name.startswith(module_name + "."))


def resolve(entry: Entry, adapter_name: str):
    """The object `entry` stands for; AdapterAPIError naming `adapter_name` when it cannot be had.

    A missing target module (or a missing module inside it, which a package's lazy attributes may
    import) or a missing attribute means "not available yet"; any other error is raised as it is.
    """
    if isinstance(entry, Unsupported):
        raise AdapterAPIError(f"{adapter_name} is not supported by npurun: {entry.why}")
    module_name, attribute = split_target(entry.target)
    try:
        module = importlib.import_module(module_name)
        if attribute is None:
            return module
        try:
            return getattr(module, attribute)
        except AttributeError:
            reason = f"{module_name} has no {attribute!r}"
    except ModuleNotFoundError as missing:
        if not _is_part_of(missing, module_name):
            raise
        reason = f"no module {missing.name!r}"
    error = AdapterAPIError(f"{adapter_name} maps to {_dotted(entry.target)}, which this installation of npurun "
                            f"does not provide yet ({reason})")
    error.reason = reason
    raise error


def availability(entry: Entry) -> str:
    """'available', 'unsupported' or 'not available yet: <reason>' here (imports the target)."""
    if isinstance(entry, Unsupported):
        return "unsupported"
    if is_adapter_module(entry):
        return "available"
    try:
        resolve(entry, "it")
    except AdapterAPIError as error:
        return f"not available yet: {error.reason}"
    return "available"


def _dotted(target: str) -> str:
    return target.replace(":", ".")


# The adapters' module trees: they exist only while the compatibility layer is active (built by
# `npurun.adapter.finder` from `npurun.adapter.tables`), so an entry naming one is a module to import.
ADAPTER_ROOTS = ("npu_bridge", "hccl")


def is_adapter_module(entry: Entry) -> bool:
    return isinstance(entry, Mapped) and ":" not in entry.target and entry.target.split(".")[0] in ADAPTER_ROOTS


# ---- placeholders: names that cannot be used until they are -----------------------------------
class _UnavailableMeta(type):
    """Placeholders for names that cannot be used: every use re-resolves, which raises the error."""

    def __new__(mcs, name, bases, namespace, **kwargs):
        for base in bases:
            if isinstance(base, _UnavailableMeta):
                base._npurun_resolve()  # subclassing an unavailable name: raises
        return super().__new__(mcs, name, bases, namespace)

    def __call__(cls, *args, **kwargs):
        return cls._npurun_resolve()(*args, **kwargs)

    def __getattr__(cls, attribute):
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return getattr(cls._npurun_resolve(), attribute)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls._npurun_resolve())

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, cls._npurun_resolve())

    def __repr__(cls):
        return f"<npurun compat placeholder {cls.__module__}.{cls.__qualname__}: {cls.__doc__}>"


def is_placeholder(value) -> bool:
    return isinstance(value, _UnavailableMeta)


def placeholder(module_name: str, name: str, entry) -> type:
    adapter_name = f"{module_name}.{name}"

    def _npurun_resolve():
        return resolve(entry, adapter_name)

    reason = entry.why if isinstance(entry, Unsupported) else f"maps to {entry.target}, not available yet"
    return _UnavailableMeta(name, (), {"_npurun_resolve": staticmethod(_npurun_resolve), "__doc__": reason,
                                       "__module__": module_name, "__qualname__": name})


def _warn_once(adapter_name: str, why: str, target):
    warned = []

    @functools.wraps(target)
    def wrapper(*args, **kwargs):
        if not warned:
            warned.append(True)
            warnings.warn(f"{adapter_name}: accepted, no effect here: {why}", UserWarning, stacklevel=2)
        return target(*args, **kwargs)

    return wrapper


def materialize(module_name: str, name: str, entry):
    """The value `module_name.name` has while the compat layer is active."""
    adapter_name = f"{module_name}.{name}"
    if isinstance(entry, Unsupported):
        return placeholder(module_name, name, entry)
    if is_adapter_module(entry):
        return importlib.import_module(entry.target)
    try:
        value = resolve(entry, adapter_name)
    except AdapterAPIError:
        return placeholder(module_name, name, entry)
    if isinstance(entry, NoEffect):
        return _warn_once(adapter_name, entry.why, value)
    return value


# ---- the published form ----------------------------------------------------------------------------
def describe(entry: Entry) -> str:
    """What an entry is here, as docs/compat.md's "here" column says it."""
    if isinstance(entry, Unsupported):
        return entry.why
    target = f"`{_dotted(entry.target)}`"
    if is_adapter_module(entry):
        target = f"the module `{entry.target}` (below)"
    text = target if isinstance(entry, Mapped) else f"{target}; {entry.why}"
    note = getattr(entry, "note", "")
    return f"{text}: {note}" if note else text
