"""Helpers shared by the parsers: quoting fragments, text and integer checks."""
from __future__ import annotations

import os
import re

PATH_MAX = 4096  # bytes, with the terminating NUL: Linux's PATH_MAX
NAME_MAX = 255   # bytes of one path component


class FormatError(ValueError):
    """The text is not of the expected format at all (not JSON, not `OpType=mode` lines).

    Its message never quotes the text: a file named by a script `npurun check` scans may be any
    file (`/etc/shadow`), and only a file of the expected format may be quoted back."""


def path_problem(path: str) -> str | None:
    """What makes `path` a path no file system call (or TensorFlow's file I/O) can take (None when
    there is nothing): a NUL character, text the file system encoding cannot hold, bytes that are
    not UTF-8, more than PATH_MAX bytes in all or more than NAME_MAX in one component."""
    if "\x00" in path:
        return f"it holds a NUL character (at index {path.index(chr(0))})"
    try:
        raw = os.fsencode(path)
    except UnicodeError:
        return "it holds characters the file system encoding cannot represent"
    try:
        path.encode("utf-8")
    except UnicodeError:  # os.fsdecode's escapes of non-UTF-8 bytes; TensorFlow encodes paths as strict UTF-8
        return "it holds bytes that are not UTF-8 text; TensorFlow's file I/O takes UTF-8 paths only"
    if len(raw) >= PATH_MAX:
        return f"it is {len(raw)} bytes long; at most {PATH_MAX - 1}"
    longest = max((len(part) for part in raw.split(b"/")), default=0)
    if longest > NAME_MAX:
        return f"one of its components is {longest} bytes long; at most {NAME_MAX}"
    return None

# ASCII digits only: `int()` and `str.isdigit()` would also accept "+5", "1_000" and "٣".
_UINT = r"[0-9]+"


def _q(fragment: object) -> str:
    """Quote a fragment for an error message, shortened so a huge input stays readable."""
    from ..errors import bounded_repr

    return bounded_repr(fragment, limit=80)


def _require_text(value: object) -> str:
    """Rule: the value must be a `str` (bytes, None, numbers are refused)."""
    if not isinstance(value, str):
        raise ValueError(f"expected text (str), got {_q(value)} of type {type(value).__name__}")
    return value


def _uint(token: str, what: str) -> int:
    """Rule: `token` is a non-negative decimal integer (ASCII digits, whitespace around allowed)."""
    digits = token.strip()
    if not re.fullmatch(_UINT, digits):
        raise ValueError(f"{what} {_q(token)} is not a non-negative integer")
    # Every limit here is far below 10**20; the cap keeps int() off its 4300-digit error.
    if len(digits.lstrip("0")) > 20:
        raise ValueError(f"{what} {_q(digits)} is far too large")
    return int(digits)
