"""NPUEstimator and its specs: tf.estimator's API on tf.compat.v1 graph-mode sessions.

Modules: `spec` (EstimatorSpec, NPUEstimatorSpec, TrainSpec, EvalSpec; ModeKeys from `mode_keys`), `estimator`
(NPUEstimator), `training_graph` and `loop` (the training loop), `hooks` (the SessionRunHook
runner and schedules), `checkpoints` (saving, retention, crash-safe restore) and
`checkpoint_files` (the files on disk), `export` (SavedModel export), `training`
(train_and_evaluate), `model_dir`, `model_dir_lock` (one training job per model_dir); the SIGTERM / SIGINT watch
during train() is `npurun.preemption`. tf.estimator conformance
(docs/tf_estimator.md): `spec_checks`, `keras_metrics`, `export_output`, `exporters`,
`early_stopping`, `in_memory_evaluator`, `experimental`, `scaffolds`, `warm_start`,
`add_metrics`, `tf_conformance`.

Imports: `config`, `debug`, `distribute`, `precision`, `runtime` and the foundations; never the
compatibility rooms (`tf1`, `tf_estimator`, `adapter`), the tools or the CLI.
"""
from .estimator import NPUEstimator
from .export import (PredictOutput, ServingInputReceiver, build_parsing_serving_input_receiver_fn,
                     build_raw_serving_input_receiver_fn)
from .loop import NanLossDuringTrainingError
from .spec import EstimatorSpec, EvalSpec, ModeKeys, NPUEstimatorSpec, TrainSpec
from .training import train_and_evaluate

__all__ = ["NPUEstimator", "EstimatorSpec", "NPUEstimatorSpec", "ModeKeys", "TrainSpec", "EvalSpec",
           "train_and_evaluate", "ServingInputReceiver", "PredictOutput", "build_raw_serving_input_receiver_fn",
           "build_parsing_serving_input_receiver_fn", "NanLossDuringTrainingError"]

# Fault errors (see docs/estimator.md, "What survives what").
from .checkpoints import CheckpointSaveError, DiskFullError, NonFiniteVariableError  # noqa: E402
from .loop import GlobalStepStalledError  # noqa: E402
from .model_dir_lock import ModelDirInUseError  # noqa: E402

__all__ += ["CheckpointSaveError", "DiskFullError", "NonFiniteVariableError", "GlobalStepStalledError",
            "ModelDirInUseError"]
