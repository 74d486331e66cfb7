"""ProfilingConfig: the profiling switch and its options (a JSON string, as on the NPU)."""
from __future__ import annotations

import os
import warnings
from types import MappingProxyType

from . import parsers
from .errors import OptionConflictError, OptionTypeError, OptionValueError
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
        Older adapters' form is also read: switch names joined by ':' ('training_trace:task_trace'),
        stored as the JSON form with each switch "on" (see `_from_legacy_form`).
      enable_options: older adapters' list of switch names (['training_trace', 'task_trace']), read
        as the ':' form; give it or profiling_options, not both.
    """

    OPTIONS = MappingProxyType({o.name: o for o in _OPTIONS})
    OWNER = "ProfilingConfig"

    LEGACY_OUTPUT = "profiling"

    def __init__(self, enable_profiling: bool = False, profiling_options: str | None = None,
                 enable_options: list | tuple | None = None):
        profiling_options = self._from_legacy_form(enable_profiling, profiling_options, enable_options)
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

    @classmethod
    def _from_legacy_form(cls, enable_profiling, profiling_options, enable_options):
        """profiling_options in today's JSON form, from older adapters' forms (else as given).

        Those adapters took the trace points from the FP_POINT / BP_POINT environment variables and
        wrote under a directory of the Ascend driver; here the points are read from the same
        variables and the output goes to ./profiling (a warning says so when profiling is on)."""
        if enable_options is not None:
            if profiling_options is not None:
                raise OptionConflictError(("enable_options", "profiling_options"), "give one of them: "
                                          "enable_options is the older adapters' list form of profiling_options",
                                          cls.OWNER)
            if not isinstance(enable_options, (list, tuple)) or len(enable_options) > 64 or \
                    not all(isinstance(n, str) for n in enable_options):
                raise OptionTypeError("enable_options", enable_options, "a list of profiling switch names such as "
                                      "['training_trace', 'task_trace']", cls.OWNER)
            names = list(enable_options)
        elif parsers.is_legacy_profiling_list(profiling_options):
            names = profiling_options.split(":")
        else:
            return profiling_options
        extra = {"output": cls.LEGACY_OUTPUT}
        for key, variable in (("fp_point", "FP_POINT"), ("bp_point", "BP_POINT")):
            if os.environ.get(variable):
                extra[key] = os.environ[variable]
        try:
            options = parsers.legacy_profiling_options(names, extra)
        except ValueError as err:
            raise OptionValueError("enable_options" if enable_options is not None else "profiling_options",
                                   enable_options if enable_options is not None else profiling_options,
                                   f"a JSON object string, or switch names joined by ':' ({err})", cls.OWNER) from None
        if enable_profiling is True:
            warnings.warn(f"{cls.OWNER}: profiling options in the older adapters' list form; profiles are written "
                          f"under ./{cls.LEGACY_OUTPUT} (give a JSON profiling_options with 'output' to choose)",
                          UserWarning, stacklevel=3)
        return parsers.format_profiling_options(options)

    @property
    def options(self):
        """The parsed profiling options (empty when none were given)."""
        return parsers.parse_profiling_options(self._values["profiling_options"] or "{}")
