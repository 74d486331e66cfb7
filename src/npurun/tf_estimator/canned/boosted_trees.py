"""`tf.estimator.BoostedTreesClassifier`, `BoostedTreesRegressor`, `BoostedTreesEstimator`: not provided, because
the TensorFlow they would run on cannot grow trees.

Two facts decide it (checked in tests/compat/test_tf_estimator_boosted_trees.py):
  - TensorFlow 2.21 (as 2.15 already) registers the 28 `tf.raw_ops.BoostedTrees*` op definitions but no kernel
    for any of them: a graph using one fails when run ("Could not find device for node ..."). TensorFlow 2.8 was the
    last release with the kernels.
  - tf.estimator removed the boosted-trees estimators in 2.9 (their last release is tf.estimator 2.8), so TF 2.15's
    tf.estimator has no `BoostedTreesClassifier` either; scripts that use them were written for TF <= 2.8.
Building them would mean writing the kernels (the tree-ensemble resource and its proto, split search, ensemble
update with pruning, bias centring, quantile sketch) rather than the training loop alone. Constructing one raises
AdapterAPIError (an ImportError and NotImplementedError) saying so, rather than failing later in a session.
"""
from __future__ import annotations

from ..table import BOOSTED_TREES
from ._common import adapter_api_error

WHY = BOOSTED_TREES  # the reason, as the tf.estimator namespace table gives it


def _not_provided(name):
    def __init__(self, *args, **kwargs):
        raise adapter_api_error()(f"tf.estimator.{name} is not supported: {WHY}")

    return type(name, (), {"__init__": __init__, "__doc__": f"`tf.estimator.{name}`: not provided (see module)."})


BoostedTreesClassifier = _not_provided("BoostedTreesClassifier")
BoostedTreesRegressor = _not_provided("BoostedTreesRegressor")
BoostedTreesEstimator = _not_provided("BoostedTreesEstimator")
