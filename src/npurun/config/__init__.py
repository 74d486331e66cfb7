"""The configuration layer: options, their rules and parsers. Plain Python, no TensorFlow.

Imports: nothing of npurun above it (the bottom layer; `npurun explain`'s report, which also reads
the precision policy, lives in `npurun.cli.explain`)."""
from .dump import DumpConfig
from .errors import OptionConflictError, OptionTypeError, OptionValueError
from .options import OPTIONS
from .profiling import ProfilingConfig
from .run_config import NPURunConfig
from .table import Kind, Option

__all__ = ["NPURunConfig", "ProfilingConfig", "DumpConfig", "OPTIONS", "Option", "Kind",
           "OptionValueError", "OptionTypeError", "OptionConflictError"]
