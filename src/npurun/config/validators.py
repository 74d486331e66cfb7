"""Small composable value checks used by the option table.

A validator is a callable `value -> normalised value` that raises `Reject` when the value is not
allowed. `Reject` carries the "allowed" text only; the option table turns it into an error that
also names the option and the value received. Plain Python: no TensorFlow here.
"""
from __future__ import annotations

import numbers
import os
from typing import Any, Callable, Collection, Optional

Validator = Callable[[Any], Any]


class Reject(Exception):
    """Raised by a validator: `allowed` says what would have been accepted."""

    def __init__(self, allowed: str, wrong_type: bool = False):
        super().__init__(allowed)
        self.allowed = allowed
        self.wrong_type = wrong_type


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def boolean() -> Validator:
    """True or False only: 0/1 or strings are type errors, as in the Ascend adapter."""

    def check(value):
        if isinstance(value, bool):
            return value
        raise Reject("True or False", wrong_type=True)

    return check


def integer(lo: Optional[int] = None, hi: Optional[int] = None, *, choices: Collection[int] = ()) -> Validator:
    """An int (not a bool) in [lo, hi], or one of `choices`."""
    if choices:
        allowed = "one of " + ", ".join(str(c) for c in choices)
    elif lo is not None and hi is not None:
        allowed = f"an int in [{lo}, {hi}]"
    elif lo is not None:
        allowed = f"an int >= {lo}"
    else:
        allowed = "an int"

    def check(value):
        if not _is_int(value):
            raise Reject(allowed, wrong_type=True)
        value = int(value)
        if choices and value not in choices:
            raise Reject(allowed)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise Reject(allowed)
        return value

    return check


def number(gt: float = 0.0) -> Validator:
    """An int or float (not a bool) strictly greater than `gt`."""
    allowed = f"a number > {gt:g}"

    def check(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise Reject(allowed, wrong_type=True)
        if not value > gt:  # also rejects NaN
            raise Reject(allowed)
        return value

    return check


def choice(*values: str) -> Validator:
    """One of the given strings, exactly (case matters, as on the NPU)."""
    allowed = "one of " + ", ".join(repr(v) for v in values)

    def check(value):
        if not isinstance(value, str):
            raise Reject(allowed, wrong_type=True)
        if value not in values:
            raise Reject(allowed)
        return value

    return check


def text() -> Validator:
    """Any non-empty string."""

    def check(value):
        if not isinstance(value, str):
            raise Reject("a string", wrong_type=True)
        if not value.strip():
            raise Reject("a non-empty string")
        return value

    return check


def parsed(parse: Callable[[Any], Any], allowed: str, *, accepts: tuple[type, ...] = (str,)) -> Validator:
    """A value in a small language, checked by `parse`; the stored value is the text given.

    The parser's own message (which quotes the bad fragment) is kept after `allowed`.
    """

    def check(value):
        if isinstance(value, bool) or not isinstance(value, accepts):
            raise Reject(allowed, wrong_type=True)
        try:
            parse(value)
        except ValueError as err:
            raise Reject(f"{allowed} ({err})") from None
        return value

    return check


def converted(parse: Callable[[Any], Any], allowed: str, *, accepts: tuple[type, ...] = (str,)) -> Validator:
    """Like `parsed`, but the stored value is what `parse` returns (e.g. bytes as an int)."""

    def check(value):
        if isinstance(value, bool) or not isinstance(value, accepts):
            raise Reject(allowed, wrong_type=True)
        try:
            return parse(value)
        except ValueError as err:
            raise Reject(f"{allowed} ({err})") from None

    return check


def existing_file(parse_text: Optional[Callable[[str], Any]] = None, *, path_rule: Optional[Callable[[str], str]] = None,
                  what: str = "file") -> Validator:
    """A path to a readable file; when `parse_text` is given its content must parse too."""
    allowed = f"the path of an existing, readable {what}"

    def check(value):
        if not isinstance(value, (str, os.PathLike)):
            raise Reject(allowed, wrong_type=True)
        path = os.fspath(value)
        if path_rule is not None:
            try:
                path = path_rule(path)
            except ValueError as err:
                raise Reject(f"{allowed} ({err})") from None
        if not os.path.isfile(path):
            raise Reject(f"{allowed} (no such file)")
        if parse_text is not None:
            try:
                with open(path, encoding="utf-8") as handle:
                    parse_text(handle.read())
            except OSError as err:
                raise Reject(f"{allowed} ({err.strerror})") from None
            except UnicodeDecodeError:
                raise Reject(f"{allowed} (not UTF-8 text)") from None
            except ValueError as err:
                raise Reject(f"{allowed} (content: {err})") from None
        return path

    return check


def directory(path_rule: Optional[Callable[[str], str]] = None) -> Validator:
    """A directory path: it need not exist yet (npurun creates it when it is used)."""
    allowed = "a directory path"

    def check(value):
        if not isinstance(value, (str, os.PathLike)):
            raise Reject(allowed, wrong_type=True)
        path = os.fspath(value)
        if not path:
            raise Reject(allowed + " (empty)")
        if path_rule is not None:
            try:
                path = path_rule(path)
            except ValueError as err:
                raise Reject(f"{allowed} ({err})") from None
        if os.path.exists(path) and not os.path.isdir(path):
            raise Reject(f"{allowed} (exists and is not a directory)")
        return path

    return check


def instance_of(type_name: str, check_type: Callable[[Any], bool]) -> Validator:
    """An object recognised by `check_type` (by duck typing, so no heavy import is needed)."""

    def check(value):
        if not check_type(value):
            raise Reject(f"a {type_name}", wrong_type=True)
        return value

    return check


def optional(inner: Validator) -> Validator:
    """None, or what `inner` accepts."""

    def check(value):
        if value is None:
            return None
        return inner(value)

    return check


def anything() -> Validator:
    """Any value: stored as given (used for options kept only for migration tooling)."""
    return lambda value: value
