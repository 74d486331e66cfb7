"""Errors raised for bad configuration.

Every message names the option, the value received and what is allowed, so a user can fix the
call without reading npurun's source.
"""
from __future__ import annotations


def describe(value: object) -> str:
    """`value` as it appears in an error message: its repr and its type."""
    text = repr(value)
    if len(text) > 120:
        text = text[:117] + "..."
    return f"{text} ({type(value).__name__})"


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
        super().__init__(f"{owner} options {', '.join(repr(o) for o in options)}: {message}")
