"""Calling user functions with the arguments they name, and turning input_fn results into tensors."""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import tensorflow as tf


def fn_args(fn: Callable) -> tuple:
    """The names a function (or functools.partial, or callable object) accepts as arguments.

    Arguments a functools.partial already binds by keyword are not counted, as tf.estimator's
    fn_args does: `partial(model_fn, foo=1)` is a model_fn of the remaining arguments.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return ()
    bound = set()
    inner = fn
    while isinstance(inner, functools.partial):
        bound.update(inner.keywords or {})
        inner = inner.func
    return tuple(name for name, p in signature.parameters.items()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in bound)


_calls = threading.local()


@contextlib.contextmanager
def estimator_call():
    """Marks an input_fn call made by the Estimator itself (see `called_by_estimator`)."""
    depth = getattr(_calls, "depth", 0)
    _calls.depth = depth + 1
    try:
        yield
    finally:
        _calls.depth = depth


def called_by_estimator() -> bool:
    """Whether the input_fn running now was called by an Estimator. tf.estimator's numpy_input_fn
    returns tensors; here it gives the Estimator a Dataset (whose position checkpoints keep and
    device loops read) and anyone else tf.estimator's (features, labels) tensors."""
    return getattr(_calls, "depth", 0) > 0


def call_with_accepted(fn: Callable, available: Mapping[str, Any], what: str, required=()):
    """Call `fn` with the keyword arguments from `available` that it names.

    Raises ValueError if it names an argument that is not available (the classic Estimator's
    rule), or lacks one of `required`.
    """
    names = fn_args(fn)
    unknown = [n for n in names if n not in available and not _has_default(fn, n)]
    if unknown:
        raise ValueError(f"{what} takes argument(s) {unknown}; allowed: {sorted(available)}")
    missing = [n for n in required if n not in names]
    if missing:
        raise ValueError(f"{what} must take the argument(s) {missing}")
    return fn(**{n: available[n] for n in names if n in available})


def _has_default(fn, name) -> bool:
    parameter = inspect.signature(fn).parameters[name]
    return parameter.default is not inspect.Parameter.empty


@dataclass
class Input:
    """What an input_fn produced, inside the Estimator's graph.

    `dataset` is set when input_fn returned a tf.data.Dataset; `iterator` is then an initializable
    iterator (its initializer runs when the session starts) and `features`/`labels` its get_next.
    """

    features: Any
    labels: Any
    dataset: Optional[tf.data.Dataset] = None
    iterator: Any = None

    @property
    def initializer(self):
        return None if self.iterator is None else self.iterator.initializer


def split_element(element):
    """A dataset element or input_fn result -> (features, labels); labels None when absent."""
    if isinstance(element, (tuple, list)):
        if len(element) == 2:
            return element[0], element[1]
        if len(element) == 1:
            return element[0], None
        raise ValueError(f"input_fn should return (features, labels) as a len 2 tuple: input_fn must give "
                         f"features or (features, labels); got a tuple of {len(element)}")
    return element, None


def make_input(result, get_next: bool = True, transform: Optional[Callable] = None) -> Input:
    """Wrap an input_fn result: a tf.data.Dataset, a (features, labels) tuple, or features alone.

    `get_next=False` creates a dataset's iterator without its get_next op (a device loop reads
    the iterator inside the loop instead). `transform(dataset)` is applied to a dataset first."""
    if isinstance(result, tf.data.Dataset):
        if transform is not None:
            result = transform(result)
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        features, labels = split_element(iterator.get_next()) if get_next else (None, None)
        return Input(features, labels, dataset=result, iterator=iterator)
    features, labels = split_element(result)
    return Input(features, labels)
