"""Bundled examples (they need scikit-learn: `pip install npurun[example]`)."""
from .digits import run_example

__all__ = ["run_example"]
