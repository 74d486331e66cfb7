"""`tensorflow_estimator.python.estimator.canned.prediction_keys`: the heads' prediction keys."""
from ..head.keys import PredictionKeys

__all__ = ["PredictionKeys"]
