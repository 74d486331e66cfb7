"""The `tf.estimator` namespace for TensorFlow 2.16+ (which has none): every name and what it is here.

A coverage table (`npurun.names.coverage`): each name maps to npurun's implementation (mostly
`npurun.estimator`, with tf.estimator's signatures from `npurun.tf_estimator`), to TensorFlow's own
object, or is unsupported with the reason. `tf.estimator`, `tf.compat.v1.estimator` and the
`tensorflow.estimator` module are built from it (`npurun.tf_estimator.Namespace`).
"""
from __future__ import annotations

from ..names.coverage import AdapterModule, Mapped, Unsupported

_EST = "npurun.estimator"
_V1_TRAIN = "tensorflow.compat.v1.train"
_CANNED = "npurun.tf_estimator.canned"
_HEAD = "npurun.tf_estimator.head"
_PREMADE_ESTIMATORS = (
    "DNNClassifier", "DNNRegressor", "DNNEstimator", "LinearClassifier", "LinearRegressor", "LinearEstimator",
    "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor", "DNNLinearCombinedEstimator", "BaselineClassifier",
    "BaselineRegressor", "BaselineEstimator")
_HEADS = ("Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead", "RegressionHead", "PoissonRegressionHead",
          "LogisticRegressionHead", "MultiHead")
# why the boosted-trees estimators are refused (canned/boosted_trees.py gives the facts it rests on)
BOOSTED_TREES = ("the boosted-trees estimators are not provided: TensorFlow 2.21 registers the "
                  "tf.raw_ops.BoostedTrees* ops but no kernels for them (TensorFlow 2.8 was the last release with the "
                  "kernels, and tf.estimator 2.8 the last with these estimators: TF 2.15's tf.estimator lacks them too); "
                  "use DNNClassifier / LinearClassifier / DNNLinearCombinedClassifier, or a trees library such as "
                  "XGBoost or LightGBM")
TF_ESTIMATOR = {
    "Estimator": Mapped("npurun.tf_estimator:Estimator",
                        "NPUEstimator with tf.estimator.Estimator's signature "
                        "(model_fn, model_dir, config, params, warm_start_from)"),
    "RunConfig": Mapped("npurun.tf_estimator:RunConfig",
                        "an NPURunConfig with tf.estimator.RunConfig's signature and defaults "
                        "(save_summary_steps=100; save_checkpoints_secs=600 when neither checkpoint interval "
                        "is given); arguments NPURunConfig does not accept (device_fn, protocol, "
                        "experimental_distribute, ...) are dropped with a warning"),
    "NPURunConfig": Mapped("npurun.config:NPURunConfig", "as spelled in the product document's migrated example"),
    "NPUEstimator": Mapped(f"{_EST}:NPUEstimator"),
    "EstimatorSpec": Mapped(f"{_EST}:EstimatorSpec"),
    "ModeKeys": Mapped(f"{_EST}:ModeKeys"),
    "TrainSpec": Mapped(f"{_EST}:TrainSpec"),
    "EvalSpec": Mapped(f"{_EST}:EvalSpec"),
    "train_and_evaluate": Mapped(f"{_EST}:train_and_evaluate"),
    "NanLossDuringTrainingError": Mapped(f"{_EST}:NanLossDuringTrainingError"),
    "WarmStartSettings": Mapped(f"{_EST}.warm_start:WarmStartSettings",
                                "vars_to_warm_start (regex or list) and var_name_to_prev_var_name; no vocab remapping"),
    "add_metrics": Mapped(f"{_EST}.add_metrics:add_metrics"),
    "Exporter": Mapped(f"{_EST}.exporters:Exporter"),
    "export": Mapped(f"{_EST}.export", "ServingInputReceiver, TensorServingInputReceiver, ClassificationOutput, "
                                       "RegressionOutput, PredictOutput, ExportOutput, "
                                       "build_raw_serving_input_receiver_fn, build_parsing_serving_input_receiver_fn"),
    "experimental": Mapped("npurun.tf_estimator.experimental", "InMemoryEvaluatorHook, stop_if_higher_hook, "
                                                               "stop_if_lower_hook, "
                                                   "stop_if_no_decrease_hook, stop_if_no_increase_hook, "
                                                   "make_early_stopping_hook, make_stop_at_checkpoint_step_hook, "
                                                   "build_raw_supervised_input_receiver_fn, call_logit_fn, "
                                                   "LinearSDCA (SDCA training of LinearClassifier/Regressor), "
                                                   "RNNClassifier, RNNEstimator (tf-keras RNNs over sequence "
                                                   "feature columns; return_sequences=True refused); "
                                                   "tf.compat.v1's KMeans (k-means on TensorFlow's clustering "
                                                   "ops), dnn_logit_fn_builder, linear_logit_fn_builder"),
    "tpu": Mapped("npurun.tf1.contrib.tpu", "TPUEstimator, TPUEstimatorSpec, RunConfig, TPUConfig, "
                                               "InputPipelineConfig run with use_tpu=False, as tf.contrib.tpu's"),
    "inputs": Mapped("npurun.tf_estimator:inputs",
                     "numpy_input_fn, pandas_input_fn (tf.estimator's batching, epochs, shuffling and messages; tensors "
                     "when called directly, a tf.data pipeline for an Estimator)"),
    **{hook: Mapped(f"{_V1_TRAIN}:{hook}") for hook in (
        "SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues", "LoggingTensorHook",
        "StopAtStepHook", "CheckpointSaverHook", "CheckpointSaverListener", "SummarySaverHook", "StepCounterHook",
        "NanTensorHook", "FeedFnHook", "ProfilerHook", "GlobalStepWaiterHook", "FinalOpsHook",
        "SecondOrStepTimer")},
    **{premade: Mapped(f"{_CANNED}:{premade}", "tf.estimator 2.15's signature, defaults and variable names "
                                                "(its checkpoints restore), on tf.compat.v1.feature_column")
       for premade in _PREMADE_ESTIMATORS},
    **{premade: Unsupported(BOOSTED_TREES) for premade in ("BoostedTreesClassifier", "BoostedTreesRegressor",
                                                            "BoostedTreesEstimator")},
    **{head: Mapped(f"{_HEAD}:{head}", "tf.estimator 2.15's losses, metrics, predictions and export outputs")
       for head in _HEADS},
    **{exporter: Mapped(f"{_EST}.exporters:{exporter}") for exporter in (
        "LatestExporter", "BestExporter", "FinalExporter")},
    **{parse: Mapped(f"{_EST}.parsing:{parse}") for parse in (
        "classifier_parse_example_spec", "regressor_parse_example_spec")},
    "VocabInfo": Mapped(f"{_V1_TRAIN}:VocabInfo", "TensorFlow's; WarmStartSettings takes no vocabulary remapping"),
}

ESTIMATOR_NAMESPACE = AdapterModule(
    "tensorflow.estimator", "`tf.estimator` and `tf.compat.v1.estimator` (TF 2.16+ has neither); attached "
    "only when TensorFlow has no estimator of its own.", TF_ESTIMATOR)
