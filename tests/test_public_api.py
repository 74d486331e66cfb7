"""The public names of the top-level package resolve, and importing npurun stays light."""
import subprocess
import sys

import npurun

PUBLIC = ["NPURunConfig", "ProfilingConfig", "DumpConfig", "NPUEstimator", "NPUEstimatorSpec", "EstimatorSpec",
          "ModeKeys", "TrainSpec", "EvalSpec", "train_and_evaluate", "util", "FixedLossScaleManager",
          "ExponentialUpdateLossScaleManager", "NPULossScaleOptimizer", "NPUOptimizer", "NPUDistributedOptimizer",
          "npu_distributed_optimizer_wrapper", "NPUBroadcastGlobalVariablesHook", "get_rank_id", "get_rank_size",
          "get_local_rank_id", "get_local_rank_size"]


def test_every_public_name_resolves():
    assert set(PUBLIC) <= set(npurun.__all__)
    for name in PUBLIC:
        assert getattr(npurun, name) is not None, name
    assert callable(npurun.util.set_iteration_per_loop)
    assert npurun.ModeKeys.PREDICT == "infer"


def test_import_npurun_does_not_import_tensorflow():
    code = "import sys, npurun; print(any(m.split('.')[0] == 'tensorflow' for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
