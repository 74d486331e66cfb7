"""npurun: Ascend's NPURunConfig and NPUEstimator on CPUs and NVIDIA GPUs, on current TensorFlow.

Importing npurun (and building an NPURunConfig) does not import TensorFlow; the Estimator and the
other runtime names are loaded on first use.
"""
from importlib import import_module

from . import logs
from .config import DumpConfig, NPURunConfig, ProfilingConfig
from .logs import disable_logging, enable_logging

logs.install()

__version__ = "0.1.0"

# Public names provided by modules that import TensorFlow: name -> module.
_LAZY = {
    "NPUEstimator": "npurun.estimator",
    "NPUEstimatorSpec": "npurun.estimator",
    "EstimatorSpec": "npurun.estimator",
    "ModeKeys": "npurun.estimator",
    "TrainSpec": "npurun.estimator",
    "EvalSpec": "npurun.estimator",
    "train_and_evaluate": "npurun.estimator",
    "util": "npurun.util",
    "FixedLossScaleManager": "npurun.precision",
    "ExponentialUpdateLossScaleManager": "npurun.precision",
    "NPULossScaleOptimizer": "npurun.precision",
    "NPUOptimizer": "npurun.precision",
    "NPUDistributedOptimizer": "npurun.distribute",
    "npu_distributed_optimizer_wrapper": "npurun.distribute",
    "NPUBroadcastGlobalVariablesHook": "npurun.distribute",
    "get_rank_id": "npurun.distribute",
    "get_rank_size": "npurun.distribute",
    "get_local_rank_id": "npurun.distribute",
    "get_local_rank_size": "npurun.distribute",
}


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'npurun' has no attribute {name!r}")
    logs.import_tensorflow()  # without its start-up banner (see npurun.logs)
    module = import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["NPURunConfig", "ProfilingConfig", "DumpConfig", "enable_logging", "disable_logging", *_LAZY]
