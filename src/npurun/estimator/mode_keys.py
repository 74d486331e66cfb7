"""The three modes a model_fn is called in, with the values tf.estimator used.

A module of its own so that the spec (`spec`) and its checks (`spec_checks`) both import it
without importing each other.
"""


class ModeKeys:
    """The three modes a model_fn is called in (the values tf.estimator used)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"

    ALL = (TRAIN, EVAL, PREDICT)
