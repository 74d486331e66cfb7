"""Comparing two dumps tensor by tensor (`npurun dump compare`).

Rules:
- Tensors are matched by (kind, step, op, io, slot); only records with a tensor file take part.
  A cast grappler's precision rewrite inserted ("x-0-CastToFp16-0-AutoMixedPrecision", only in a
  low-precision run's dump) is matched with the tensor it converts (output 0 of "x"): the row
  shows the error the cast itself introduced.
- Order is A's index order, which is execution (topological) order, so the first mismatch
  reported is the earliest op whose result differs; tensors only in B follow.
- Element tolerance is NumPy's `isclose`: |a - b| <= atol + rtol * |b|. NaN equals NaN and an
  inf equals the same-signed inf; any other non-finite difference is a mismatch with error inf.
- `max_abs` is max |a - b|; `max_rel` is max |a - b| / |b| (inf where b == 0 and a != 0).
- Status: "ok", "mismatch" (values beyond tolerance), "shape" (shapes differ), "dtype" (one is
  numeric and the other is not), "only_a", "only_b". Only "mismatch" and "shape" fail a comparison:
  a tensor present in one dump only is reported but expected when the dumps selected other ops.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .dump_files import Dump

FAILING = ("mismatch", "shape")
_GRAPPLER_CAST = re.compile(r"^(?P<origin>.+?)-(?P<slot>\d+)-CastTo\w+-\d+-AutoMixedPrecision$")


def cast_origin(op_name: str):
    """(op, output slot) whose tensor a grappler precision cast converts, or None for another op."""
    match = _GRAPPLER_CAST.match(op_name)
    return (match.group("origin"), int(match.group("slot"))) if match else None


@dataclass(frozen=True)
class Comparison:
    key: tuple
    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    bad: int = 0        # elements beyond tolerance
    size: int = 0
    dtypes: tuple = ()  # (A's dtype, B's dtype) when both exist
    against: str | None = None  # B's op when it is not the same op (a cast matched with its origin)

    @property
    def label(self) -> str:
        kind, step, op, io, slot = self.key
        return f"{op} {io}:{slot}" + (f" (step {step})" if step is not None else "")


def record_key(record: dict) -> tuple:
    return (record.get("kind"), record.get("step"), record["op"], record["io"], record["slot"])


def compare_arrays(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> tuple[str, float, float, int]:
    """(status, max_abs, max_rel, elements beyond tolerance) for two arrays of one key."""
    if a.shape != b.shape:
        return "shape", math.nan, math.nan, max(a.size, b.size)
    numeric = a.dtype.kind in "biufc", b.dtype.kind in "biufc"
    if numeric != (True, True):
        if numeric[0] != numeric[1]:
            return "dtype", math.nan, math.nan, a.size
        bad = int(np.count_nonzero(a != b))
        return ("mismatch" if bad else "ok"), float(bool(bad)), float(bool(bad)), bad
    wide = np.complex128 if "c" in a.dtype.kind + b.dtype.kind else np.float64
    x, y = a.astype(wide), b.astype(wide)
    close = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(x - y))
        diff = np.where(np.isnan(diff), np.inf, diff)  # inf - inf of opposite signs, NaN vs number
        rel = np.where(same, 0.0, diff / np.abs(y))
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(np.where(np.isnan(rel), np.inf, rel).max()) if rel.size else 0.0
    bad = int(np.count_nonzero(~close))
    return ("mismatch" if bad else "ok"), max_abs, max_rel, bad


def compare_dumps(a: Dump, b: Dump, rtol: float = 1e-5, atol: float = 1e-8) -> list[Comparison]:
    """One Comparison per tensor key of A (in A's order), then the keys only B has."""
    in_b = {record_key(r): r for r in b.records if r.get("file")}
    results, seen, used_b = [], set(), set()
    for record in a.records:
        if not record.get("file"):
            continue
        key = record_key(record)
        if key in seen:
            continue
        seen.add(key)
        other, against = in_b.get(key), None
        origin = cast_origin(record["op"]) if other is None else None
        if origin is not None:
            kind, step = key[0], key[1]
            other = in_b.get((kind, step, origin[0], "output", origin[1]))
            against = origin[0] if other is not None else None
        if other is None:
            results.append(Comparison(key, "only_a", dtypes=(record.get("dtype"), None)))
            continue
        used_b.add(record_key(other))
        x, y = a.load(record), b.load(other)
        status, max_abs, max_rel, bad = compare_arrays(x, y, rtol, atol)
        results.append(Comparison(key, status, max_abs, max_rel, bad, int(x.size),
                                  (record.get("dtype"), other.get("dtype")), against))
    results += [Comparison(key, "only_b", dtypes=(None, in_b[key].get("dtype")))
                for key in in_b if key not in seen and key not in used_b]
    return results


def first_failure(results: list[Comparison]) -> Comparison | None:
    """The earliest comparison (in execution order) that failed, or None."""
    return next((c for c in results if c.status in FAILING), None)
