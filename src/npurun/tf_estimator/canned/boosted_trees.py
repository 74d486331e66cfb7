"""`tf.estimator.BoostedTreesClassifier` / `BoostedTreesRegressor`: not provided by npurun yet.

TensorFlow 2.21 still ships the boosted-trees kernels (`tf.raw_ops.BoostedTrees*`), but the tree-growing
training loop tf.estimator built on them is not written here yet; constructing one raises AdapterAPIError
(an ImportError and NotImplementedError) saying so, rather than failing later.
"""
from __future__ import annotations

from ._common import adapter_api_error

_WHY = ("npurun does not provide the boosted-trees estimators yet (TensorFlow 2.21 keeps the tf.raw_ops.BoostedTrees* "
        "kernels, but not tf.estimator's tree-growing training loop); use DNNClassifier / LinearClassifier / "
        "DNNLinearCombinedClassifier, or train the trees with a library such as XGBoost or LightGBM")


def _not_provided(name):
    def __init__(self, *args, **kwargs):
        raise adapter_api_error()(f"tf.estimator.{name} is not supported: {_WHY}")

    return type(name, (), {"__init__": __init__, "__doc__": f"`tf.estimator.{name}`: not provided (see module)."})


BoostedTreesClassifier = _not_provided("BoostedTreesClassifier")
BoostedTreesRegressor = _not_provided("BoostedTreesRegressor")
BoostedTreesEstimator = _not_provided("BoostedTreesEstimator")
