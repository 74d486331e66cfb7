"""`tf.contrib.tfprof`: TF 1.15's `ProfileContext` and `model_analyzer`, over TensorFlow's own profiler.

TF 1.15's contrib.tfprof was three names: `ProfileContext` (TensorFlow's profile_context, which TensorFlow 2
removed), `model_analyzer` (deprecated wrappers: `print_model_analysis` and option dicts) and `tfprof_logger`.
ModelZoo's DeepLab copies (deeplab-v3-plus, DeepLabv3+_ID0147, Deep_Speech's research tree) open
`ProfileContext(enabled=profile_dir is not None, ...)` around training and print a model analysis in eval and
export (7 folders). A disabled ProfileContext did nothing in TF 1.15 either; an enabled one patched
Session.run to trace steps, which is not provided here and says so.
"""
from __future__ import annotations

import sys
import types

from ...names.coverage import AdapterAPIError


class ProfileContext:
    """TF 1.15's ProfileContext(profile_dir, trace_steps=None, dump_steps=None, enabled=True, debug=False).

    Disabled (the scripts' default: no --profile_logdir) it is an empty context, as it was in TF 1.15.
    Enabled, it raises: tracing every session run into profile_dir is not provided here."""

    def __init__(self, profile_dir, trace_steps=None, dump_steps=None, enabled=True, debug=False):
        if enabled:
            raise AdapterAPIError(
                f"tf.contrib.tfprof.ProfileContext(enabled=True, profile_dir={profile_dir!r}) is not supported by "
                "npurun: tracing session runs into profile_dir is not provided; use tf.compat.v1.profiler "
                "(Profiler / profile) or NPURunConfig(profiling_config=...), or leave it disabled",
                name="tf.contrib.tfprof.ProfileContext")
        self._profile_dir = profile_dir

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def add_auto_profiling(self, cmd, options, profile_steps):
        """Nothing is traced in a disabled context, so there is nothing to profile (as in TF 1.15)."""

    @property
    def profiler(self):
        return None


def _model_analyzer() -> types.ModuleType:
    from tensorflow.python.profiler import model_analyzer, option_builder

    builder = option_builder.ProfileOptionBuilder
    module = types.ModuleType(f"{__name__}.model_analyzer",
                              "TF 1.15's contrib.tfprof.model_analyzer: TensorFlow's model_analyzer.profile and "
                              "the option dicts of ProfileOptionBuilder (which replaced these constants)")
    module.TRAINABLE_VARS_PARAMS_STAT_OPTIONS = builder.trainable_variables_parameter()
    module.FLOAT_OPS_OPTIONS = builder.float_operation()
    module.PRINT_ALL_TIMING_MEMORY = builder.time_and_memory()

    def print_model_analysis(graph, run_meta=None, op_log=None, tfprof_cmd="scope",
                             tfprof_options=module.TRAINABLE_VARS_PARAMS_STAT_OPTIONS):
        """Prints (or writes, per the options) the analysis and returns TensorFlow's profile proto."""
        return model_analyzer.profile(graph, run_meta=run_meta, op_log=op_log, cmd=tfprof_cmd,
                                      options=tfprof_options)

    module.print_model_analysis = print_model_analysis
    return module


def __getattr__(name):
    # Built when first read: TensorFlow's profiler is imported only by scripts that use it.
    if name == "model_analyzer":
        module = _model_analyzer()
        setattr(sys.modules[__name__], name, module)
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
