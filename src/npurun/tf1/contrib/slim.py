"""`tf.contrib.slim` as TensorFlow 1.15 had it: the maintained `tf-slim` package, plus the names TF 1.15's
slim namespace had that tf-slim's does not.

TF 1.15's `tensorflow.contrib.slim` star-imported modules without `__all__`, so TensorFlow modules they
imported were attributes of slim too; scripts use them: `slim.variable_scope.variable_scope("ball")`
(AlignedReID_ID1460, Aligned-ReID_ID1361, DeepSort_ID0505: 4 ModelZoo files). tf-slim keeps most of them
(`slim.init_ops`, `slim.array_ops`, ...) but imports `variable_scope` as `vs`.
"""
import tf_slim
from tensorflow.python.ops import variable_scope

globals().update({name: value for name, value in vars(tf_slim).items() if not name.startswith("__")})
variable_scope = variable_scope  # after the update: TF's variable_scope module, as TF 1.15's slim had it


def __getattr__(name):
    """A tf-slim submodule imported after this module was made (`slim.nets` once `tf_slim.nets` is imported)."""
    return getattr(tf_slim, name)
