"""ProfilingConfig: the profiling switch and its options (a JSON string, as on the NPU)."""
from __future__ import annotations

from types import MappingProxyType

from . import parsers
from .errors import OptionConflictError
from .table import Configurable, Kind, Option, Scalar
from .validators import boolean, parsed

_OPTIONS = (
    Option("enable_profiling", False, boolean(), Kind.EFFECT, nullable=False,
           codec=Scalar("profiling_mode", "b"),
           rule="True or False; True needs profiling_options with an 'output' directory",
           doc="Turn profiling on.",
           mechanism="per-step RunMetadata collection (only when on: nothing runs per step otherwise)"),
    Option("profiling_options", None,
           parsed(parsers.parse_profiling_options, "a JSON object string of profiling options"), Kind.EFFECT,
           codec=Scalar("profiling_options", "s"),
           rule='a JSON string, e.g. {"output": "/tmp/profiling", "training_trace": "on", "task_trace": "on", '
                '"fp_point": "", "bp_point": ""}',
           doc="What to profile and where to write it.",
           mechanism="training_trace -> per-iteration CSV/JSON; task_trace -> Chrome trace JSON, under output"),
)


class ProfilingConfig(Configurable):
    """Profiling configuration, passed to `NPURunConfig(profiling_config=...)`.

    Args:
      enable_profiling: True turns profiling on. Default False.
      profiling_options: a JSON string. Keys: `output` (directory, required when enabled),
        `training_trace` / `task_trace` ("on"/"off"), `fp_point` / `bp_point` (op names marking the
        start of the forward and the end of the backward pass), `aic_metrics` and the other NPU
        keys (validated; recorded). Invalid JSON, an unknown key or value is a `ValueError`.
    """

    OPTIONS = MappingProxyType({o.name: o for o in _OPTIONS})
    OWNER = "ProfilingConfig"

    def __init__(self, enable_profiling: bool = False, profiling_options: str | None = None):
        arguments = {"enable_profiling": enable_profiling, "profiling_options": profiling_options}
        values = self._validate_arguments(arguments)
        if values["enable_profiling"]:
            if values["profiling_options"] is None:
                raise OptionConflictError(("enable_profiling", "profiling_options"),
                                          "enable_profiling=True needs profiling_options (a JSON string with "
                                          "at least an 'output' directory)", self.OWNER)
            if not parsers.parse_profiling_options(values["profiling_options"]).get("output"):
                raise OptionConflictError(("profiling_options",), "enable_profiling=True needs an 'output' "
                                          "directory in profiling_options", self.OWNER)
        self._arguments = {k: v for k, v in arguments.items() if not self.OPTIONS[k].is_default(v)}
        self._values = values

    @property
    def options(self):
        """The parsed profiling options (empty when none were given)."""
        return parsers.parse_profiling_options(self._values["profiling_options"] or "{}")
