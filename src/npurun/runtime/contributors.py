"""The ordered list of plan contributors; each module owns the options it maps."""
from __future__ import annotations

from . import session_options

CONTRIBUTORS = (
    session_options.contribute,
)
