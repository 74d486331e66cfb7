"""tf.estimator's premade (canned) estimators on npurun's Estimator (NPUEstimator with tf.estimator's
signature), with tf.estimator 2.15's signatures, defaults and variable names (see docs/tf_estimator.md)."""
from .baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
from .boosted_trees import BoostedTreesClassifier, BoostedTreesEstimator, BoostedTreesRegressor
from .dnn import DNNClassifier, DNNEstimator, DNNRegressor
from .dnn_linear_combined import DNNLinearCombinedClassifier, DNNLinearCombinedEstimator, DNNLinearCombinedRegressor
from .linear import LinearClassifier, LinearEstimator, LinearRegressor, LinearSDCA

__all__ = ["BaselineClassifier", "BaselineEstimator", "BaselineRegressor", "BoostedTreesClassifier",
           "BoostedTreesEstimator", "BoostedTreesRegressor", "DNNClassifier", "DNNEstimator", "DNNRegressor",
           "DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator", "DNNLinearCombinedRegressor",
           "LinearClassifier", "LinearEstimator", "LinearRegressor", "LinearSDCA"]
