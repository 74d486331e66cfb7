"""tf.estimator's heads (`tf.estimator.BinaryClassHead`, ...), with tf.estimator 2.15's losses, metrics,
predictions and export outputs, producing npurun's EstimatorSpec (see docs/tf_estimator.md)."""
from .base import Head
from .classification import BinaryClassHead, MultiClassHead, MultiLabelHead
from .keys import MetricKeys, PredictionKeys
from .multi import MultiHead
from .regression import LogisticRegressionHead, PoissonRegressionHead, RegressionHead

__all__ = ["Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead", "RegressionHead", "PoissonRegressionHead",
           "LogisticRegressionHead", "MultiHead", "MetricKeys", "PredictionKeys"]
