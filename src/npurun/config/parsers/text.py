"""Parsers for one-line option values: shape ranges, engine parallelism, dump steps,
memory sizes, paths, comma and device lists."""
from __future__ import annotations

import bisect
import os
import re
from collections.abc import Collection
from dataclasses import dataclass

from ._common import _UINT, _q, _require_text, _uint


# --------------------------------------------------------------------------- shape ranges

@dataclass(frozen=True)
class DimRange:
    """One dimension's allowed sizes: `lo..hi` inclusive; `hi=None` means unbounded (only `-1`)."""
    lo: int
    hi: int | None

    def __post_init__(self) -> None:
        if type(self.lo) is not int or self.lo < 0:
            raise ValueError(f"dimension lower bound {_q(self.lo)} must be an int >= 0")
        if self.hi is None:
            if self.lo != 0:  # the grammar can only say "-1", i.e. any size
                raise ValueError("an unbounded dimension (-1) has lower bound 0")
        elif type(self.hi) is not int or self.hi < self.lo:
            raise ValueError(f"dimension range {self.lo}~{self.hi!r} needs lo <= hi")

    def contains(self, n: int) -> bool:
        """True when size `n` is within this range."""
        return self.lo <= n and (self.hi is None or n <= self.hi)

    def __str__(self) -> str:
        if self.hi is None:
            return "-1"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}~{self.hi}"


Shape = tuple[DimRange, ...]


@dataclass(frozen=True)
class ShapeRanges:
    """Per-input shape ranges: `getnext` for dataset inputs, `data` for placeholders, in order."""
    getnext: tuple[Shape, ...] = ()
    data: tuple[Shape, ...] = ()

    def __post_init__(self) -> None:
        if not self.getnext and not self.data:
            raise ValueError("no shapes given; expected e.g. 'getnext:[128,3~5,-1];data:[]'")

    def __str__(self) -> str:
        return format_shape_ranges(self)


_SHAPE_SECTIONS = ("getnext", "data")
_SHAPE_RE = re.compile(r"\s*\[([^\[\]]*)\]\s*")


def _parse_dim(token: str) -> DimRange:
    """Rule: a dim is `N` (fixed, N >= 0), `-1` (unbounded) or `lo~hi` with 0 <= lo <= hi."""
    t = token.strip()
    if t == "-1":
        return DimRange(0, None)
    if re.fullmatch(_UINT, t):
        n = _uint(t, "dimension")
        return DimRange(n, n)
    lo, sep, hi = t.partition("~")
    if sep and re.fullmatch(_UINT, lo.strip()) and re.fullmatch(_UINT, hi.strip()):
        lo_n, hi_n = _uint(lo, "lower bound"), _uint(hi, "upper bound")
        if lo_n > hi_n:
            raise ValueError(f"dimension range {_q(t)} has its lower bound above its upper bound")
        return DimRange(lo_n, hi_n)
    raise ValueError(f"bad dimension {_q(t)}; allowed: an int >= 0, -1, "
                     "or lo~hi with 0 <= lo <= hi")


def _parse_shape(inner: str) -> Shape:
    """Rule: the text between `[` and `]` is empty (a scalar) or comma-separated dims."""
    if not inner.strip():
        return ()
    return tuple(_parse_dim(token) for token in inner.split(","))


def _parse_shape_list(body: str) -> tuple[Shape, ...]:
    """Rule: one or more `[...]` shapes separated by `,` (whitespace around them allowed)."""
    shapes, pos = [], 0
    while True:
        match = _SHAPE_RE.match(body, pos)
        if not match:
            raise ValueError(f"expected a shape like '[128,3~5,-1]' at {_q(body[pos:])}")
        shapes.append(_parse_shape(match.group(1)))
        pos = match.end()
        if pos == len(body):
            return tuple(shapes)
        if body[pos] != ",":
            raise ValueError(f"expected ',' between shapes at {_q(body[pos:])}")
        pos += 1


def parse_shape_ranges(text: str) -> ShapeRanges:
    """`getnext:[..],[..];data:[..]`: `;`-separated sections, each name at most once."""
    if not _require_text(text).strip():
        raise ValueError("no shapes given; expected e.g. 'getnext:[128,3~5,-1];data:[]'")
    sections: dict[str, tuple[Shape, ...]] = {}
    for section in text.split(";"):
        name, sep, body = section.partition(":")
        name = name.strip()
        if not sep:
            raise ValueError(f"section {_q(section)} lacks 'name:'; "
                             "expected 'getnext:[...]' or 'data:[...]'")
        if name not in _SHAPE_SECTIONS:
            raise ValueError(f"input kind {_q(name)} is unknown; allowed: 'getnext', 'data'")
        if name in sections:
            raise ValueError(f"input kind {_q(name)} is given twice; give each kind once")
        sections[name] = _parse_shape_list(body)
    return ShapeRanges(**sections)


def format_shape_ranges(value: ShapeRanges) -> str:
    """Canonical text: `getnext` then `data`, empty sections omitted, no spaces."""
    parts = []
    for name in _SHAPE_SECTIONS:
        shapes = getattr(value, name)
        if shapes:
            parts.append(name + ":" + ",".join("[" + ",".join(map(str, s)) + "]" for s in shapes))
    return ";".join(parts)


# --------------------------------------------------------------------------- stream parallelism

STREAM_ENGINES = ("DNN_VM_TF", "DNN_V100")  # AI CPU engine, AI Core engine
STREAM_PARALLEL_RANGE = (1, 13)


def parse_stream_parallel(text: str) -> tuple[tuple[str, int], ...]:
    """`ENGINE:N[,ENGINE:N]`: engines from STREAM_ENGINES, each once, N in [1, 13]; order kept."""
    pairs: list[tuple[str, int]] = []
    lo, hi = STREAM_PARALLEL_RANGE
    for item in _require_text(text).split(","):
        engine, sep, number = (part.strip() for part in item.partition(":"))
        if not sep:
            raise ValueError(f"item {_q(item)} is not 'ENGINE:N' (e.g. 'DNN_VM_TF:10')")
        if engine not in STREAM_ENGINES:
            raise ValueError(f"engine {_q(engine)} is unknown; "
                             f"allowed: {', '.join(STREAM_ENGINES)}")
        if any(engine == seen for seen, _ in pairs):
            raise ValueError(f"engine {_q(engine)} is given twice; give each engine once")
        n = _uint(number, f"parallelism for {engine}")
        if not lo <= n <= hi:
            raise ValueError(f"parallelism {n} for {engine} is out of range; allowed: [{lo}, {hi}]")
        pairs.append((engine, n))
    return tuple(pairs)


def format_stream_parallel(value: tuple[tuple[str, int], ...]) -> str:
    """Canonical text: `ENGINE:N` items joined by `,`, in the given order."""
    return ",".join(f"{engine}:{n}" for engine, n in value)


# --------------------------------------------------------------------------- dump steps

DUMP_STEP_MAX_ITEMS = 100


def parse_dump_step(text: str) -> tuple[tuple[int, int], ...]:
    """`0|5|10-20`: `|`-separated steps `N` or ranges `A-B` (A <= B), ascending, not overlapping.

    Each item becomes an inclusive (first, last) pair; `N` is (N, N); at most 100 items."""
    items = _require_text(text).split("|")
    if len(items) > DUMP_STEP_MAX_ITEMS:
        raise ValueError(f"{len(items)} items given; allowed: at most {DUMP_STEP_MAX_ITEMS}")
    steps: list[tuple[int, int]] = []
    for item in items:
        first, sep, last = item.partition("-")
        a = _uint(first, "step")
        b = _uint(last, "step") if sep else a
        if a > b:
            raise ValueError(f"range {_q(item.strip())} is descending; write 'A-B' with A <= B")
        if steps and a <= steps[-1][1]:
            raise ValueError(f"item {_q(item.strip())} does not come after the item before it; "
                             "items must be in ascending order and must not overlap")
        steps.append((a, b))
    return tuple(steps)


def format_dump_step(value: tuple[tuple[int, int], ...]) -> str:
    """Canonical text: `N` for a single step, `A-B` for a range, joined by `|`."""
    return "|".join(str(a) if a == b else f"{a}-{b}" for a, b in value)


def dump_step_contains(steps: tuple[tuple[int, int], ...], n: int) -> bool:
    """True when step `n` is selected by the parsed `steps` (ascending, so bisect is enough)."""
    i = bisect.bisect_right(steps, (n, float("inf"))) - 1
    return i >= 0 and steps[i][0] <= n <= steps[i][1]


# --------------------------------------------------------------------------- memory sizes

MEMORY_SIZE_MAX = 256 * 1024 ** 3  # 274877906944 bytes, the seed's upper bound


def parse_memory_size(value: int | str) -> int:
    """Bytes as an int (not bool), a decimal-digit string, or a product of them ("21*1024*1024*1024", as TF 2
    ModelZoo scripts write it for npu_device's global options); in [0, 274877906944]."""
    if isinstance(value, str) and "*" in value:
        n = 1
        for factor in value.split("*"):
            n *= _uint(factor.strip(), "memory size factor")
    elif isinstance(value, str):
        n = _uint(value, "memory size")
    elif isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        raise ValueError(f"memory size {_q(value)} must be an int or a string of digits")
    if not 0 <= n <= MEMORY_SIZE_MAX:
        raise ValueError(f"memory size {n} is out of range; allowed: [0, {MEMORY_SIZE_MAX}] bytes")
    return n


def format_memory_size(n: int) -> str:
    """Canonical text: the decimal number of bytes."""
    return str(parse_memory_size(n))


# --------------------------------------------------------------------------- paths

def _path_char_ok(ch: str) -> bool:
    """Rule: ASCII letters, digits, `_ - .`, CJK (U+4E00-U+9FFF, U+3400-U+4DBF), and `/`."""
    return (ch.isascii() and (ch.isalnum() or ch in "_-./")) or \
        "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def check_path_chars(path: str) -> str:
    """Check the seed's character rule; `~` (home) is allowed as the whole first component.

    The rule applies to the text the user wrote, not to their home directory; the returned path
    has `~` expanded."""
    if not _require_text(path):
        raise ValueError("path is empty")
    home = path == "~" or path.startswith("~/")
    for i, ch in enumerate(path):
        if not (_path_char_ok(ch) or (home and i == 0)):
            raise ValueError(f"path {_q(path)} has character {ch!r} (U+{ord(ch):04X}) "
                             f"at index {i}; "
                             "allowed: letters a-z A-Z, digits, '_', '-', '.', Chinese characters, "
                             "'/' between components, and '~' as the first component")
    return os.path.expanduser(path) if home else path


# --------------------------------------------------------------------------- name and device lists

def parse_comma_list(text: str, allowed: Collection[str] | None = None) -> tuple[str, ...]:
    """Comma-separated names (whitespace around them stripped), each non-empty and given once.

    A name may not contain whitespace; with `allowed`, every name must be one of them."""
    names: list[str] = []
    for item in _require_text(text).split(","):
        name = item.strip()
        if not name or any(ch.isspace() for ch in name):
            raise ValueError(f"name {_q(name)} in {_q(text)} is empty or contains whitespace")
        if name in names:
            raise ValueError(f"name {_q(name)} is given twice")
        if allowed is not None and name not in allowed:
            choices = ", ".join(sorted(map(str, allowed)))
            raise ValueError(f"name {_q(name)} is not allowed; allowed: {choices}")
        names.append(name)
    return tuple(names)


def format_comma_list(names: tuple[str, ...]) -> str:
    """Canonical text: the names joined by `,`."""
    return ",".join(names)


DEVICE_ID_MAX = 7


def parse_device_list(text: str) -> tuple[int, ...]:
    """Comma-separated device ids, ints in [0, 7], each once, at least one; order kept."""
    ids: list[int] = []
    for item in _require_text(text).split(","):
        n = _uint(item, "device id")
        if n > DEVICE_ID_MAX:
            raise ValueError(f"device id {n} is out of range; allowed: [0, {DEVICE_ID_MAX}]")
        if n in ids:
            raise ValueError(f"device id {n} is given twice")
        ids.append(n)
    return tuple(ids)


def format_device_list(value: tuple[int, ...]) -> str:
    """Canonical text: the ids joined by `,`."""
    return ",".join(map(str, value))
