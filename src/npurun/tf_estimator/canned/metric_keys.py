"""`tensorflow_estimator.python.estimator.canned.metric_keys`: the heads' metric names."""
from ..head.keys import MetricKeys

__all__ = ["MetricKeys"]
