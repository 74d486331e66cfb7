"""Errors raised for bad configuration.

Every message names the option, the value received and what is allowed, so a user can fix the
call without reading npurun's source. Values are quoted with `bounded_repr`, whose cost and length
are bounded whatever the value is (a YAML alias bomb's nested lists, a 10**5-digit int, a str of a
gigabyte): `repr()` would build the whole text first.
"""
from __future__ import annotations

import reprlib

REPR_LIMIT = 120  # characters of a value shown in a message


class _BoundedRepr(reprlib.Repr):
    """reprlib with room for ordinary values (shown exactly as repr shows them) and bounded for the rest."""

    def __init__(self):
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = self.maxlist = self.maxarray = self.maxset = self.maxfrozenset = self.maxdeque = 8
        self.maxdict = 8
        self.maxstring = REPR_LIMIT
        self.maxlong = 60
        self.maxother = REPR_LIMIT

    def repr_int(self, value, level):
        if value.bit_length() > 200:  # repr() of a huge int is slow, and past 4300 digits an error
            return f"<int of {value.bit_length()} bits>"
        return super().repr_int(value, level)

    def repr_str(self, value, level):
        if len(value) > self.maxstring:  # repr() of the head only: the whole string is never copied
            return repr(value[:self.maxstring - 10]) + f"... ({len(value)} characters)"
        return repr(value)

    def repr_bytes(self, value, level):
        if len(value) > self.maxstring:
            return repr(value[:self.maxstring - 10]) + f"... ({len(value)} bytes)"
        return repr(value)


_REPR = _BoundedRepr()


def bounded_repr(value: object, limit: int = REPR_LIMIT) -> str:
    """`repr(value)` for a message: exact for ordinary values, at most about `limit` characters for any
    value, in time bounded by the value's first few elements (never its whole size)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a value whose own __repr__ fails is still named by its type
        text = f"<{type(value).__name__} object>"
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return text


def describe(value: object) -> str:
    """`value` as it appears in an error message: its bounded repr and its type."""
    return f"{bounded_repr(value)} ({type(value).__name__})"


class OptionValueError(ValueError):
    """An option received a value of the right type that its rule does not allow."""

    def __init__(self, option: str, value: object, allowed: str, owner: str = "NPURunConfig"):
        self.option, self.value, self.allowed = option, value, allowed
        super().__init__(f"{owner} option '{option}': got {describe(value)}; allowed: {allowed}")


class OptionTypeError(TypeError, ValueError):
    """An option received a value of the wrong type.

    Also a ValueError: the Ascend adapter raises ValueError for a value of the wrong type (a
    sub-config that is not one, for instance), so adapter-era `except ValueError` still catches it.
    """

    def __init__(self, option: str, value: object, allowed: str, owner: str = "NPURunConfig"):
        self.option, self.value, self.allowed = option, value, allowed
        super().__init__(f"{owner} option '{option}': got {describe(value)}; allowed: {allowed}")


class OptionConflictError(ValueError):
    """Two or more options are each valid but not allowed together."""

    def __init__(self, options: tuple[str, ...], message: str, owner: str = "NPURunConfig"):
        self.options = options
        super().__init__(f"{owner} options {', '.join(bounded_repr(o) for o in options)}: {message}")
