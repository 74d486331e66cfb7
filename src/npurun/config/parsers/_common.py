"""Helpers shared by the parsers: quoting fragments, text and integer checks."""
from __future__ import annotations

import re

# ASCII digits only: `int()` and `str.isdigit()` would also accept "+5", "1_000" and "٣".
_UINT = r"[0-9]+"


def _q(fragment: object) -> str:
    """Quote a fragment for an error message, shortened so a huge input stays readable."""
    text = repr(fragment)
    return text if len(text) <= 80 else text[:77] + "..."


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
