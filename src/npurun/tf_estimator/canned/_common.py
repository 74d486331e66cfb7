"""What the premade estimators share: their base class, the heads they pick, variable bookkeeping."""
from __future__ import annotations

import contextlib

import tensorflow as tf

from ..head.head_utils import binary_or_multi_class_head  # noqa: F401

_v1 = tf.compat.v1


def estimator_base():
    """tf.estimator.Estimator as npurun gives it (NPUEstimator with tf.estimator's signature)."""
    from .. import Estimator

    return Estimator


def adapter_api_error():
    from ...names.coverage import AdapterAPIError

    return AdapterAPIError


def resource_variables(model_fn):
    """`model_fn` creating its variables as resource variables, as tf.estimator 2.15's premade estimators did
    (their Keras layers and TF 2 feature columns always do). The tf.compat.v1 feature columns used here make ref
    variables after `tf.compat.v1.disable_v2_behavior()`, and a Keras optimizer cannot make slots for those."""
    import functools

    @functools.wraps(model_fn)
    def with_resource_variables(*args, **kwargs):
        with _v1.variable_scope(_v1.get_variable_scope(), use_resource=True):
            return model_fn(*args, **kwargs)
    return with_resource_variables


@contextlib.contextmanager
def new_trainable_variables():
    """Collects the trainable variables created inside the block (into the yielded list)."""
    collected = []
    before = {id(v) for v in _v1.trainable_variables()}
    yield collected
    collected.extend(v for v in _v1.trainable_variables() if id(v) not in before)


def check_features(features):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")


def add_layer_summary(value, tag):
    _v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.math.zero_fraction(value))
    _v1.summary.histogram(f"{tag}/activation", value)


@contextlib.contextmanager
def feature_column_quiet():
    """TensorFlow's deprecation chatter about the tf.compat.v1 feature-column functions the premade estimators
    are built on (they are the documented way here; the user did not call them)."""
    import logging
    import warnings

    from tensorflow.python.util import deprecation

    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with deprecation.silence(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            # TensorFlow's own feature-column layers call its deprecated `layer.add_variable`
            warnings.filterwarnings("ignore", message=r"`layer.add_variable` is deprecated", category=UserWarning)
            yield
    finally:
        logger.setLevel(level)


def fraction_of_zero(variables):
    """The fraction of the entries of `variables` that are zero (the linear models' summary)."""
    with tf.name_scope("zero_fraction"):
        sizes = [tf.size(v, out_type=tf.int64) for v in variables]
        total = tf.add_n(sizes)
        zeros = tf.add_n([tf.math.zero_fraction(v) * tf.cast(size, tf.float32) for v, size in zip(variables, sizes)])
        return tf.math.divide_no_nan(zeros, tf.cast(total, tf.float32))
