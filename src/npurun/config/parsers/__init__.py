"""Parsers for the options whose values are small languages.

Each `parse_*` takes text (or, for memory sizes, an int or text) and returns a plain, immutable,
typed value; each `format_*` turns that value back into canonical text, so that
`parse_x(format_x(v)) == v` for every valid `v`. Any bad input raises `ValueError` (never another
exception) with a message that quotes the offending part and says what is allowed; the caller adds
the option's name. No TensorFlow here: standard library only.
"""
from .files import (AIC_METRICS, FUSION_GROUPS, MIX_ACTIONS, MIX_LISTS, OP_PRECISION_MODES, STORAGE_LIMIT_MB, FusionSwitch, MixListEdits, ProfilingOptions, format_fusion_switch,
                    format_mixlist, format_op_precision_ini, format_profiling_options, parse_fusion_switch,
                    parse_mixlist, parse_op_precision_ini, parse_profiling_options,
                    is_legacy_profiling_list, legacy_profiling_options)
from ._common import path_problem
from .text import (DEVICE_ID_MAX, DUMP_STEP_MAX_ITEMS, MEMORY_SIZE_MAX, STREAM_ENGINES, STREAM_PARALLEL_RANGE, DimRange, ShapeRanges, check_path_chars, dump_step_contains, format_comma_list,
                   format_device_list, format_dump_step, format_memory_size, format_shape_ranges,
                   format_stream_parallel, parse_comma_list, parse_device_list, parse_dump_step,
                   parse_memory_size, parse_shape_ranges, parse_stream_parallel)

__all__ = [name for name in dir() if not name.startswith('_') and name not in ('annotations', 'files', 'text')]
