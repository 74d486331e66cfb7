"""Small composable value checks used by the option table.

A validator is a callable `value -> normalised value` that raises `Reject` when the value is not
allowed. `Reject` carries the "allowed" text only; the option table turns it into an error that
also names the option and the value received. Plain Python: no TensorFlow here.
"""
from __future__ import annotations

import numbers
import os
import stat
from typing import Any, Callable, Collection, Optional

from .parsers._common import FormatError, path_problem

Validator = Callable[[Any], Any]

INT64_MAX = 2 ** 63 - 1  # TensorFlow's widest integer (AttrValue.i, ConfigProto fields, tensors)
INT64_MIN = -2 ** 63
FILE_LIMIT = 1 << 20  # bytes: an option's file (a mixlist, an ini, a fusion switch) is a few KB


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


def integer(lo: Optional[int] = None, hi: Optional[int] = None, *, choices: Collection[int] = (),
            why: str = "", whole_floats: bool = False) -> Validator:
    """An int (not a bool) in [lo, hi], or one of `choices`; without `hi` (`lo`), at most (least) what
    an int64 holds, as TensorFlow stores every integer option. `why` says where a given `hi` comes from.
    `whole_floats`: a float with no fraction (`1e9`) is that int, as tf.estimator.RunConfig's step counts took
    any number (scripts "disable" a hook with `log_step_count_steps=1e9`)."""
    if choices:
        allowed = "one of " + ", ".join(str(c) for c in choices)
    elif lo is not None and hi is not None:
        allowed = f"an int in [{lo}, {hi}]" + (f" ({why})" if why else "")
    elif lo is not None:
        allowed = f"an int >= {lo}"
    else:
        allowed = "an int"
    low = INT64_MIN if lo is None else lo
    high = INT64_MAX if hi is None else hi
    if whole_floats:
        allowed += " (or a float with no fraction, as 1e9)"
    beyond = allowed if hi is not None and lo is not None else f"{allowed}, within int64 ([{INT64_MIN}, {INT64_MAX}])"

    def check(value):
        if whole_floats and isinstance(value, numbers.Real) and not _is_int(value) and not isinstance(value, bool):
            if not float(value).is_integer():
                raise Reject(allowed)
            value = int(value)
        if not _is_int(value):
            raise Reject(allowed, wrong_type=True)
        value = int(value)
        if choices and value not in choices:
            raise Reject(allowed)
        if lo is not None and value < lo or hi is not None and value > hi:
            raise Reject(allowed)
        if not low <= value <= high:
            raise Reject(beyond)
        return value

    return check


def number(gt: float = 0.0) -> Validator:
    """An int or float (not a bool) strictly greater than `gt` and at most INT64_MAX (finite: TensorFlow's
    timers add it to the time, and an int past a float's range cannot even be converted)."""
    allowed = f"a number > {gt:g}"

    def check(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise Reject(allowed, wrong_type=True)
        if not value > gt:  # also rejects NaN
            raise Reject(allowed)
        if not value <= INT64_MAX:
            raise Reject(f"{allowed}, finite and at most {INT64_MAX}")
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


def _no_nul(value: str, allowed: str) -> None:
    if "\x00" in value:
        raise Reject(f"{allowed} (without NUL characters; one is at index {value.index(chr(0))})")


def _usable_path(path: str, allowed: str) -> None:
    problem = path_problem(path)
    if problem is not None:
        raise Reject(f"{allowed} ({problem})")


def text(*, path: bool = False) -> Validator:
    """Any non-empty string without NUL characters; with `path`, one the file system can take (see
    `parsers.path_problem`: PATH_MAX, NAME_MAX, encodable)."""

    def check(value):
        if not isinstance(value, str):
            raise Reject("a string", wrong_type=True)
        if not value.strip():
            raise Reject("a non-empty string")
        if path:
            _usable_path(value, "a path")
        _no_nul(value, "a string")
        return value

    return check


def parsed(parse: Callable[[Any], Any], allowed: str, *, accepts: tuple[type, ...] = (str,)) -> Validator:
    """A value in a small language, checked by `parse`; the stored value is the text given.

    The parser's own message (which quotes the bad fragment) is kept after `allowed`.
    """

    def check(value):
        if isinstance(value, bool) or not isinstance(value, accepts):
            raise Reject(allowed, wrong_type=True)
        if isinstance(value, str):
            _no_nul(value, allowed)
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
    """A path to a readable regular file; when `parse_text` is given its content (UTF-8, at most
    FILE_LIMIT bytes) must parse too.

    Messages quote the content only when it is of the expected format (the parser raised a plain
    ValueError about one entry): a text that is not (a `parsers.FormatError`, not UTF-8, too large)
    is described, never quoted, since the path may name any file (`npurun check` reads the paths
    a scanned script names)."""
    allowed = f"the path of an existing, readable {what}"

    def check(value):
        if not isinstance(value, (str, os.PathLike)):
            raise Reject(allowed, wrong_type=True)
        path = os.fspath(value)
        if not isinstance(path, str):
            raise Reject(allowed, wrong_type=True)
        _usable_path(path, allowed)
        if path_rule is not None:
            try:
                path = path_rule(path)
            except ValueError as err:
                raise Reject(f"{allowed} ({err})") from None
        if not os.path.isfile(path):
            raise Reject(f"{allowed} (no such file)")
        if parse_text is not None:
            parse_text_of(path)
        return path

    def parse_text_of(path: str) -> None:
        try:
            # O_NONBLOCK: a FIFO swapped in after the isfile test does not block the open.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as err:
            raise Reject(f"{allowed} ({err.strerror})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Reject(f"{allowed} (not a regular file)")
            if info.st_size > FILE_LIMIT:
                raise Reject(f"{allowed} (it is {info.st_size} bytes; a {what} is at most {FILE_LIMIT})")
            chunks, size = [], 0
            while size <= FILE_LIMIT:
                chunk = os.read(fd, FILE_LIMIT + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as err:
            raise Reject(f"{allowed} ({err.strerror})") from None
        finally:
            os.close(fd)
        if size > FILE_LIMIT:
            raise Reject(f"{allowed} (it is more than {FILE_LIMIT} bytes; a {what} is at most {FILE_LIMIT})")
        try:
            content = b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise Reject(f"{allowed} (not UTF-8 text, so not a {what})") from None
        try:
            parse_text(content)
        except FormatError as err:
            raise Reject(f"{allowed} (not a {what}: {err})") from None
        except RecursionError:
            raise Reject(f"{allowed} (nested too deeply to be a {what})") from None
        except ValueError as err:
            raise Reject(f"{allowed} (content: {err})") from None

    return check


def directory(path_rule: Optional[Callable[[str], str]] = None) -> Validator:
    """A directory path: it need not exist yet (npurun creates it when it is used)."""
    allowed = "a directory path"

    def check(value):
        if not isinstance(value, (str, os.PathLike)):
            raise Reject(allowed, wrong_type=True)
        path = os.fspath(value)
        if not isinstance(path, str):
            raise Reject(allowed, wrong_type=True)
        if not path:
            raise Reject(allowed + " (empty)")
        _usable_path(path, allowed)
        if path_rule is not None:
            try:
                path = path_rule(path)
            except ValueError as err:
                raise Reject(f"{allowed} ({err})") from None
        if os.path.exists(path) and not os.path.isdir(path):
            raise Reject(f"{allowed} (exists and is not a directory)")
        if os.path.islink(path) and not os.path.exists(path):  # makedirs would fail with "File exists"
            raise Reject(f"{allowed} (a symbolic link to nothing, or in a loop)")
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
