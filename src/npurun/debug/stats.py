"""Tensor statistics for `dump_data="stats"`, overflow records and `npurun dump show`.

Rules:
- `size`, `nan`, `pos_inf`, `neg_inf` count elements; the inf/NaN counts are 0 for non-float dtypes.
- `min`, `max`, `mean`, `std` are over the *finite* elements (None when there are none), so one
  inf does not hide the range of the rest; `zeros` counts exact zeros.
- Non-numeric tensors (strings, objects) get only `size`.
- Every value is a plain Python int/float/None, so a record is JSON as written.
"""
from __future__ import annotations

import numpy as np


def _is_numeric(array: np.ndarray) -> bool:
    return array.dtype.kind in "biufc"


def plain_array(value) -> np.ndarray:
    """`value` as a NumPy array of a standard dtype.

    TensorFlow returns bfloat16 and float8 tensors with ml_dtypes types (dtype kind "V"), which
    `np.save` cannot round-trip and NumPy's math does not treat as floats: widen them to float32,
    which holds every such value exactly. String tensors become fixed-width bytes."""
    array = np.asarray(value)
    if array.dtype.kind == "V":
        try:
            return array.astype(np.float32)
        except (TypeError, ValueError):
            return array
    if array.dtype.kind == "O":
        # String tensors arrive as object arrays of bytes, which np.save refuses without pickle.
        try:
            return array.astype(np.bytes_)
        except (TypeError, ValueError):
            return array
    return array


def tensor_stats(value) -> dict:
    """Statistics of one tensor value (see the module rules)."""
    array = plain_array(value)
    stats = {"size": int(array.size), "min": None, "max": None, "mean": None, "std": None,
             "nan": 0, "pos_inf": 0, "neg_inf": 0, "zeros": 0}
    if not _is_numeric(array):
        return {"size": stats["size"]}
    if array.dtype.kind == "c":
        # Complex values have no order: describe their magnitudes, count non-finite parts.
        nonfinite = ~np.isfinite(array)
        stats["nan"] = int(np.count_nonzero(np.isnan(array)))
        stats["pos_inf"] = int(np.count_nonzero(nonfinite & ~np.isnan(array)))
        array = np.abs(array[~nonfinite])
    elif array.dtype.kind == "f":
        stats["nan"] = int(np.count_nonzero(np.isnan(array)))
        stats["pos_inf"] = int(np.count_nonzero(np.isposinf(array)))
        stats["neg_inf"] = int(np.count_nonzero(np.isneginf(array)))
        array = array[np.isfinite(array)]
    stats["zeros"] = int(np.count_nonzero(array == 0))
    if array.size:
        wide = array.astype(np.float64)  # float16/bfloat16 sums overflow; bool has no std
        stats.update(min=float(wide.min()), max=float(wide.max()), mean=float(wide.mean()),
                     std=float(wide.std()))
    return stats


def has_overflow(value) -> bool:
    """True when a float (or complex) tensor holds an inf or a NaN."""
    array = plain_array(value)
    return array.dtype.kind in "fc" and not bool(np.all(np.isfinite(array)))
