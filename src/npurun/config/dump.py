"""DumpConfig: tensor dumps and overflow detection."""
from __future__ import annotations

import os
from types import MappingProxyType

from . import parsers
from .errors import OptionConflictError, OptionValueError
from .table import Configurable, Kind, Option, Scalar
from .validators import boolean, choice, parsed, text

_OPTIONS = (
    Option("enable_dump", False, boolean(), Kind.EFFECT, nullable=False, codec=Scalar("enable_dump", "b"),
           rule="True or False; True needs dump_path",
           doc="Dump the tensors of the selected ops at the selected steps.",
           mechanism="tensors written as .npy with a JSON-lines index under dump_path"),
    Option("dump_path", None, text(path=True), Kind.EFFECT, codec=Scalar("dump_path", "s"),
           rule="an existing, writable directory; required when dumping",
           doc="Where dumps are written.", mechanism="root of the dump files"),
    Option("dump_step", None, parsed(parsers.parse_dump_step, "steps like '0|5|10-20'"), Kind.EFFECT,
           codec=Scalar("dump_step", "s"),
           rule="'N|A-B|...' ascending, at most 100 items; None dumps every step",
           doc="Which steps to dump.", mechanism="dump only at these global steps"),
    Option("dump_mode", "output", choice("input", "output", "all"), Kind.EFFECT, nullable=False,
           none_is_default=True, codec=Scalar("dump_mode", "s"),
           rule="input, output or all; None: not set (output)", doc="Dump ops' inputs, outputs or both.",
           mechanism="which tensors of each selected op are written"),
    Option("enable_dump_debug", False, boolean(), Kind.EFFECT, nullable=False,
           codec=Scalar("enable_dump_debug", "b"),
           rule="True or False; True needs dump_path",
           doc="Overflow detection: dump the ops whose outputs hold inf or NaN.",
           mechanism="finite checks on op outputs; overflowing ops written in execution order"),
    Option("dump_debug_mode", "all", choice("aicore_overflow", "atomic_overflow", "all"), Kind.EFFECT,
           nullable=False, none_is_default=True, codec=Scalar("dump_debug_mode", "s"),
           rule="aicore_overflow, atomic_overflow or all; None: not set (all)",
           doc="Which overflows to detect.",
           mechanism="all three detect inf/NaN in op outputs here (no AI Core / atomic distinction on CPU/GPU)"),
    Option("dump_data", "tensor", choice("tensor", "stats"), Kind.EFFECT, nullable=False,
           codec=Scalar("dump_data", "s"),
           rule="tensor or stats", doc="Write whole tensors or their statistics.",
           mechanism="stats: min/max/mean/count of inf and NaN per tensor instead of .npy files"),
    Option("dump_layer", None, text(), Kind.EFFECT, codec=Scalar("dump_layer", "s"),
           rule="space-separated op names, or None for all ops",
           doc="Dump only these ops.", mechanism="op-name filter of the dump"),
)


class DumpConfig(Configurable):
    """Dump configuration, passed to `NPURunConfig(dump_config=...)`.

    Args:
      enable_dump: dump tensors (default False).
      dump_path: an existing, writable directory; required when `enable_dump` or
        `enable_dump_debug` is True.
      dump_step: steps to dump, like "0|5|10-20" (ascending, at most 100 items); None: every step.
      dump_mode: "input", "output" (default) or "all".
      enable_dump_debug: overflow detection (default False).
      dump_debug_mode: "aicore_overflow", "atomic_overflow" or "all" (default).
      dump_data: "tensor" (default) or "stats".
      dump_layer: space-separated op names to dump; None dumps every op.
    """

    OPTIONS = MappingProxyType({o.name: o for o in _OPTIONS})
    OWNER = "DumpConfig"

    def __init__(self, enable_dump=False, dump_path=None, dump_step=None, dump_mode="output",
                 enable_dump_debug=False, dump_debug_mode="all", dump_data="tensor", dump_layer=None):
        arguments = {k: v for k, v in locals().items() if k in self.OPTIONS}
        values = self._validate_arguments(arguments)
        if values["enable_dump"] or values["enable_dump_debug"]:
            path = values["dump_path"]
            if path is None:
                raise OptionConflictError(("enable_dump", "enable_dump_debug", "dump_path"),
                                          "dumping needs dump_path, an existing writable directory", self.OWNER)
            if not os.path.isdir(path):
                raise OptionValueError("dump_path", path, "an existing directory (it does not exist)", self.OWNER)
            if not os.access(path, os.W_OK | os.X_OK):
                raise OptionValueError("dump_path", path, "a writable directory (it is not writable)", self.OWNER)
        self._arguments = {k: v for k, v in arguments.items() if not self.OPTIONS[k].is_default(v)}
        self._values = values

    @property
    def steps(self):
        """The parsed dump_step ranges, or None for every step."""
        step = self._values["dump_step"]
        return parsers.parse_dump_step(step) if step is not None else None
