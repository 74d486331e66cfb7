"""tf.estimator conformance: errors carry tf.estimator's sentences (code and habits match on them), a case each.

Found by running tensorflow/estimator's own estimator/training/export tests against npurun.
"""
import numpy as np
import pytest
import tensorflow as tf

from npurun.estimator import EstimatorSpec, EvalSpec, ModeKeys, NPUEstimator, ServingInputReceiver, TrainSpec
from npurun.estimator.exporters import Exporter

v1 = tf.compat.v1
X = np.arange(8, dtype="float32").reshape(4, 2)


def _model_fn(features, labels, mode):
    w = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer(0.5))
    logits = tf.reshape(tf.matmul(features["x"], w), [-1])
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"y": logits, "y2": tf.stack([logits, logits], axis=1)})
    loss = tf.reduce_mean(tf.square(logits - labels))
    return EstimatorSpec(mode, loss=loss, train_op=v1.assign_add(v1.train.get_global_step(), 1))


def _model_fn_without_labels(features, mode):
    return _model_fn(features, None, mode)


def _input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, np.ones(4, "float32"))).batch(2)


class _NotAHook:
    pass


def test_spec_hooks_and_listeners_use_tf_estimators_words():
    with pytest.raises(TypeError, match="All hooks must be `SessionRunHook` instances"):
        TrainSpec(_input_fn, hooks=[_NotAHook()])
    with pytest.raises(TypeError, match="All hooks must be `SessionRunHook` instances"):
        EvalSpec(_input_fn, hooks=[_NotAHook()])
    with pytest.raises(TypeError, match="All saving_listeners must be `CheckpointSaverListener` instances"):
        TrainSpec(_input_fn, saving_listeners=[_NotAHook()])


def test_exporter_names_are_checked_as_tf_estimator_does():
    def named(name):
        class Named(Exporter):
            def export(self, *args):
                return None

        Named.name = name
        return Named()

    with pytest.raises(ValueError, match="An Exporter cannot have a name that is `None` or empty"):
        EvalSpec(_input_fn, exporters=[named("")])
    with pytest.raises(ValueError, match="An Exporter must have a string name"):
        EvalSpec(_input_fn, exporters=[named(3)])
    with pytest.raises(ValueError, match="`exporters` must have unique names"):
        EvalSpec(_input_fn, exporters=[named("a"), named("a")])
    assert [e.name for e in EvalSpec(_input_fn, exporters=[named("a"), named("b")]).exporters] == ["a", "b"]


def test_receiver_keys_use_tf_estimators_words():
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 2])
        with pytest.raises(ValueError, match="receiver_tensor keys must be strings"):
            ServingInputReceiver({"x": x}, {1: x})


def test_estimator_errors_use_tf_estimators_words(tmp_path):
    with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
        NPUEstimator(_model_fn, config="not a config")
    with pytest.raises(ValueError, match="`model_dir` are set both in constructor and `RunConfig`, but with "
                                         "different values"):
        from npurun import NPURunConfig

        NPUEstimator(_model_fn, model_dir=str(tmp_path / "a"), config=NPURunConfig(model_dir=str(tmp_path / "b")))
    estimator = NPUEstimator(_model_fn, model_dir=str(tmp_path / "m"))
    with pytest.raises(ValueError, match="Could not find trained model in model_dir"):
        estimator.get_variable_value("w")
    three = lambda: tf.data.Dataset.from_tensors(({"x": X}, X[:, 0], X[:, 1]))  # noqa: E731
    with pytest.raises(ValueError, match="input_fn should return \\(features, labels\\) as a len 2 tuple"):
        estimator.train(three, steps=1)
    with pytest.raises(ValueError, match="model_fn does not take labels, but input_fn returns labels"):
        NPUEstimator(_model_fn_without_labels, model_dir=str(tmp_path / "m")).train(_input_fn, steps=1)

    estimator.train(_input_fn, steps=1)
    features = lambda: tf.data.Dataset.from_tensor_slices({"x": X}).batch(2)  # noqa: E731
    with pytest.raises(ValueError, match="Expected to run at least one output from"):
        next(estimator.predict(features, predict_keys=["nope"]))
    assert [p["y"] for p in estimator.predict(features, predict_keys=["y"])] == pytest.approx(X.sum(axis=1) * 0.5)


def test_sparse_loss_and_predictions_are_refused_as_tf_estimator_does():
    with tf.Graph().as_default():
        sparse = tf.sparse.SparseTensor(indices=[[0]], values=[0.0], dense_shape=[1])
        with pytest.raises(TypeError, match="loss must be Tensor"):
            EstimatorSpec(ModeKeys.EVAL, loss=sparse)
        with pytest.raises(TypeError, match=r"predictions\[sparse\] must be Tensor"):
            EstimatorSpec(ModeKeys.PREDICT, predictions={"sparse": sparse})
        dense = EstimatorSpec(ModeKeys.PREDICT, predictions={"dense": tf.sparse.to_dense(sparse)})
        assert list(dense.predictions) == ["dense"]


def test_receivers_check_their_tensors_as_tf_estimator_does():
    from npurun.estimator.export import SupervisedInputReceiver

    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 2])
        with pytest.raises(ValueError, match="feature keys must be strings or ints"):
            ServingInputReceiver({4.5: x}, {"x": x})
        with pytest.raises(ValueError, match="feature f must be a Tensor, SparseTensor, or RaggedTensor"):
            ServingInputReceiver({"f": [1.0]}, {"x": x})
        with pytest.raises(ValueError, match="receiver_tensor r must be a Tensor"):
            ServingInputReceiver({"f": x}, {"r": [1.0]})
        with pytest.raises(ValueError, match="labels must be defined"):
            SupervisedInputReceiver({"f": x}, None, {"x": x})
        receiver = ServingInputReceiver({0: x, "s": tf.sparse.from_dense(x)}, {"x": x})
        assert sorted(map(str, receiver.features)) == ["0", "s"]
