"""Setting attributes on TensorFlow's modules, and undoing it exactly.

TensorFlow publishes its API through module wrappers (`TFModuleWrapper`: `tf.compat.v1` is one, and
`import tensorflow.compat.v1 as tf` builds another); setting an attribute on a wrapper also sets it
on the module it wraps, and a wrapper caches lookups. `Patches` sets an attribute on such objects,
remembering each module's state from before the first change, and `undo()` restores it (deleting
from the wrapper's dict, public-name list and cache what was not there). Used by the compatibility
layer (`npurun.adapter.tensorflow`) and by `npurun.estimator_api`.

Plain Python: nothing of TensorFlow is imported here.
"""
from __future__ import annotations

import sys


def raw(obj):
    """The module behind one of TensorFlow's module wrappers (or the object itself)."""
    return vars(obj).get("_tfmw_wrapped_module", obj)


def has(obj, attribute) -> bool:
    """Whether `obj.attribute` can be read (TensorFlow's lazy loaders raise more than AttributeError)."""
    try:
        getattr(obj, attribute)
    except Exception:  # noqa: BLE001 - any failure to read means "not there" here
        return False
    return True


def unique(objects) -> list:
    """`objects` without None and without repeats (by identity), in order."""
    found = []
    for obj in objects:
        if obj is not None and all(obj is not seen for seen in found):
            found.append(obj)
    return found


def v1_objects(tf) -> list:
    """Every object a script may reach as `tf.compat.v1` (TensorFlow wraps the module more than once)."""
    candidates = [getattr(getattr(tf, "compat", None), "v1", None), sys.modules.get("tensorflow.compat.v1"),
                  sys.modules.get("tensorflow._api.v2.compat.v1")]
    return unique(candidates + [raw(c) for c in candidates if c is not None])


def _remove(obj, attribute):
    inner = raw(obj)
    vars(inner).pop(attribute, None)
    if inner is not obj:  # a wrapper: its dict, its public-name list and its lookup cache
        vars(obj).pop(attribute, None)
        names = vars(obj).get("__all__")
        if isinstance(names, list) and attribute in names:
            names.remove(attribute)
        try:
            obj._fastdict_pop(attribute)
        except Exception:  # noqa: BLE001 - not cached
            pass


class Patches:
    """Attributes set on modules (and `sys.modules` entries added), each undone by `undo()`."""

    def __init__(self):
        self._changes: list = []  # (object, attribute, had_it, old_value), in order
        self._modules: list = []  # (name, module) added to sys.modules

    def set_all(self, objects, attribute, value) -> None:
        """Set `attribute` on every object, remembering each one's module state from before any change.

        Setting on a TensorFlow module wrapper also sets on the module it wraps, so the state is taken
        from the wrapped module, once, before the first change.
        """
        objects = list(objects)
        before = {}
        for obj in objects:
            inner = raw(obj)
            if id(inner) not in before:
                before[id(inner)] = (attribute in vars(inner), vars(inner).get(attribute))
        for obj in objects:
            had, old = before[id(raw(obj))]
            self._changes.append((obj, attribute, had, old))
            setattr(obj, attribute, value)

    def add_module(self, name: str, module) -> bool:
        """`sys.modules[name] = module` unless a module of that name is there already."""
        if name in sys.modules:
            return False
        sys.modules[name] = module
        self._modules.append((name, module))
        return True

    def undo(self) -> None:
        """Restore every attribute set and remove every module added, newest first."""
        while self._modules:
            name, module = self._modules.pop()
            if sys.modules.get(name) is module:
                del sys.modules[name]
        while self._changes:
            obj, attribute, had, old = self._changes.pop()
            if had:
                setattr(obj, attribute, old)
            else:
                _remove(obj, attribute)
