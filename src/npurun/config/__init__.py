"""The configuration layer: options, their rules and parsers. Plain Python, no TensorFlow."""
from .dump import DumpConfig
from .errors import OptionConflictError, OptionTypeError, OptionValueError
from .options import OPTIONS
from .profiling import ProfilingConfig
from .run_config import NPURunConfig
from .table import Kind, Option

__all__ = ["NPURunConfig", "ProfilingConfig", "DumpConfig", "OPTIONS", "Option", "Kind",
           "OptionValueError", "OptionTypeError", "OptionConflictError"]
