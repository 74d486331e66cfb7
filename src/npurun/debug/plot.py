"""`npurun dump compare --plot FILE`: relative error along the graph, as a PNG.

One line per step: x is the tensor's position in graph (execution) order among the compared
tensors, y its max relative error (log scale; an infinite error is drawn at the top of the axis
with a marker). Needs matplotlib (`pip install "npurun[plot]"`); without it, `PlotUnavailable`.
"""
from __future__ import annotations

import math

from .. import safe_files


class PlotUnavailable(RuntimeError):
    pass


def plot_relative_error(results, path: str, title: str = "") -> int:
    """Write the PNG; returns how many tensors it shows."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable('--plot needs matplotlib: pip install "npurun[plot]" (or pip install matplotlib)') \
            from None
    compared = [c for c in results if c.max_rel is not None and not math.isnan(c.max_rel)]
    finite = [c.max_rel for c in compared if math.isfinite(c.max_rel) and c.max_rel > 0]
    floor = min(finite) / 10 if finite else 1e-12
    ceiling = max(finite) * 10 if finite else 1.0
    by_step: dict = {}
    for c in compared:
        by_step.setdefault(c.key[1], []).append(c)
    figure, axes = plt.subplots(figsize=(max(8, min(40, len(compared) / max(1, len(by_step)) * 0.25)), 5))
    for step, rows in by_step.items():
        ys = [ceiling if not math.isfinite(c.max_rel) else max(c.max_rel, floor) for c in rows]
        axes.plot(range(len(rows)), ys, marker=".", label=f"step {step}")
        infinite = [i for i, c in enumerate(rows) if not math.isfinite(c.max_rel)]
        if infinite:
            axes.scatter(infinite, [ceiling] * len(infinite), marker="^", color="red")
    first = next(iter(by_step.values()), [])
    if 0 < len(first) <= 60:
        axes.set_xticks(range(len(first)))
        axes.set_xticklabels([c.key[2] for c in first], rotation=90, fontsize=6)
    axes.set_yscale("log")
    axes.set_xlabel("tensor, in graph order")
    axes.set_ylabel("max relative error (A vs B)")
    axes.set_title(title or "relative error along the graph")
    axes.legend()
    try:
        # Through a private temporary file renamed over `path`: a link planted there is refused, never written through.
        with safe_files.replacing(path, "wb", "plot file") as handle:
            figure.savefig(handle, format="png", dpi=100, bbox_inches="tight")  # room for long op names
    finally:
        plt.close(figure)
    return len(compared)
