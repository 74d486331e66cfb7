"""Bundled examples (their data is bundled too: nothing to download or install)."""
from .digits import run_example

__all__ = ["run_example"]
