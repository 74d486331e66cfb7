"""What TensorFlow 2.21 gets while active: tf.estimator, tf.compat.v1.layers, the NpuOptimizer Session."""
import sys
import textwrap
import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.client import session as tf_session

import npurun
import npurun.compat as compat
from npurun.tf1 import layers
from npurun.tf_estimator import RunConfig, numpy_input_fn


def test_attached_while_active_and_restored_after():
    import tensorflow.compat.v1 as v1_before

    assert not hasattr(tf, "estimator")
    original_layers = v1_before.layers
    with compat.active():
        import tensorflow.compat.v1 as v1

        for module in (tf, tf.compat.v1, v1):
            assert module.estimator.RunConfig is RunConfig
            assert module.estimator.ModeKeys is npurun.ModeKeys
            assert module.estimator.EstimatorSpec is npurun.EstimatorSpec
            assert issubclass(module.estimator.Estimator, npurun.NPUEstimator)
            assert module.estimator.NPURunConfig is npurun.NPURunConfig
        for module in (tf.compat.v1, v1):
            # TF 1's layers from tf-keras: npurun's module, or TensorFlow's own lazy loader when an earlier
            # run with TF_USE_LEGACY_KERAS=1 resolved it to tf-keras (the same functions)
            assert module.layers.dense is layers.dense and module.layers.Dense is layers.Dense
            assert module.Session is not tf_session.Session and issubclass(module.Session, tf_session.Session)
        assert tf.estimator.LoggingTensorHook is tf.compat.v1.train.LoggingTensorHook
        from tensorflow.estimator import RunConfig as imported
        from tensorflow.compat.v1.estimator import ModeKeys
        assert imported is RunConfig and ModeKeys is npurun.ModeKeys
    assert not hasattr(tf, "estimator") and not hasattr(tf.compat.v1, "estimator")
    assert "tensorflow.estimator" not in sys.modules and "tensorflow.compat.v1.estimator" not in sys.modules
    import tensorflow.compat.v1 as v1_after
    assert v1_after.layers is original_layers and tf.compat.v1.Session is tf_session.Session
    assert v1_after.Session is tf_session.Session


def test_tf_estimator_unsupported_and_unknown_names(active):
    with pytest.raises(compat.AdapterAPIError, match=r"tensorflow\.estimator\.BoostedTreesClassifier is not "
                                                      r"supported by npurun: the boosted-trees estimators"):
        tf.estimator.BoostedTreesClassifier(feature_columns=[], n_batches_per_layer=1)
    with pytest.raises(AttributeError, match=r"tensorflow\.estimator\.NoSuchName is not provided"):
        tf.estimator.NoSuchName


def test_run_config_has_tf_signature_and_defaults():
    config = RunConfig("/tmp/some_model_dir", 7)
    assert isinstance(config, npurun.NPURunConfig)
    assert (config.model_dir, config.tf_random_seed) == ("/tmp/some_model_dir", 7)
    assert config.save_summary_steps == 100  # tf.estimator's default, not NPURunConfig's 0
    assert config.save_checkpoints_secs == 600 and config.save_checkpoints_steps is None
    assert RunConfig(save_checkpoints_steps=50).save_checkpoints_steps == 50
    assert RunConfig(save_checkpoints_steps=50).save_checkpoints_secs is None
    assert RunConfig(iterations_per_loop=5).iterations_per_loop == 5  # NPURunConfig's own options pass through


def test_run_config_warns_about_what_has_no_effect():
    with pytest.warns(UserWarning, match=r"argument protocol='grpc\+verbs' has no effect with npurun"):
        assert RunConfig(protocol="grpc+verbs").protocol == "grpc+verbs"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RunConfig(device_fn=None, protocol=None, session_creation_timeout_secs=7200)  # defaults: silent
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
        RunConfig(no_such_option=1)
    with pytest.raises(ValueError, match="keep_checkpoint_max"):
        RunConfig(keep_checkpoint_max=-1)


def test_isinstance_and_replace():
    assert isinstance(npurun.NPURunConfig(), RunConfig)  # the adapter's NPURunConfig is a RunConfig
    assert not isinstance(object(), RunConfig)
    replaced = RunConfig(keep_checkpoint_max=1).replace(keep_checkpoint_max=3)
    assert isinstance(replaced, RunConfig) and replaced.keep_checkpoint_max == 3


def test_estimator_takes_tf_estimator_positional_order(tmp_path):
    with compat.active():
        def model_fn(features, labels, mode, params):
            raise AssertionError("not called")

        estimator = tf.estimator.Estimator(model_fn, str(tmp_path / "m"), RunConfig(), {"a": 1}, str(tmp_path))
        assert estimator.params == {"a": 1} and estimator._warm_start_from == str(tmp_path)


def _numpy_batches(dataset):
    """Every element of `dataset` as NumPy, in eager or graph mode (other test packages switch the
    process to graph mode)."""
    if tf.executing_eagerly():
        return list(dataset.as_numpy_iterator())
    element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    batches = []
    with tf.compat.v1.Session() as session:
        try:
            while True:
                batches.append(session.run(element))
        except tf.errors.OutOfRangeError:
            return batches


def _run_to_end(tensors):
    """Every batch `tensors` yields in a session, until OutOfRangeError."""
    batches = []
    with tf.compat.v1.Session(graph=tf.compat.v1.get_default_graph()) as sess:
        while True:
            try:
                batches.append(sess.run(tensors))
            except tf.errors.OutOfRangeError:
                return batches


def test_numpy_input_fn_batches_epochs_and_shuffles():
    x = {"x": np.arange(10, dtype=np.float32).reshape(10, 1)}
    y = np.arange(10, dtype=np.int32)
    with tf.Graph().as_default():  # called directly, as tf.estimator's: (features, labels) tensors
        batches = _run_to_end(numpy_input_fn(x, y, batch_size=4, num_epochs=2, shuffle=False)())
    assert [len(labels) for _, labels in batches] == [4, 4, 4, 4, 4]
    assert list(np.concatenate([labels for _, labels in batches])) == list(range(10)) * 2
    with tf.Graph().as_default():
        features, labels = _run_to_end(numpy_input_fn(x, y, batch_size=10, num_epochs=1, shuffle=True)())[0]
    assert sorted(labels) == list(range(10)) and list(features["x"][:, 0].astype(int)) == list(labels)
    with tf.Graph().as_default():  # without y: the features alone
        assert [len(b["x"]) for b in _run_to_end(numpy_input_fn(x, batch_size=8, shuffle=False)())] == [8, 2]
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as boolean"):
        numpy_input_fn(x, y)
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        numpy_input_fn(x, y[:5], shuffle=False)()
    with pytest.raises(ValueError, match="x cannot be an empty dict"):
        numpy_input_fn({}, y, shuffle=False)()
    with pytest.raises(TypeError, match="x must be a dict or array"):
        numpy_input_fn([1, 2], None, shuffle=False)()


def test_pandas_input_fn_feeds_columns_and_a_target():
    import pandas as pd

    from npurun.tf_estimator import pandas_input_fn

    x = pd.DataFrame({"a": np.arange(4) * 1.0, "b": np.arange(32, 36)}, index=np.arange(100, 104))
    y = pd.Series(np.arange(-32, -28), index=np.arange(100, 104))
    with tf.Graph().as_default():
        batches = _run_to_end(pandas_input_fn(x, y, batch_size=3, shuffle=False, num_epochs=1)())
    assert [list(f["a"]) for f, _ in batches] == [[0, 1, 2], [3]] and list(batches[0][1]) == [-32, -31, -30]
    labels = pd.DataFrame({"a": np.arange(-32, -28), "t": np.arange(4)}, index=x.index)  # a DataFrame: by column
    with tf.Graph().as_default():
        features, target = _run_to_end(pandas_input_fn(x, labels, batch_size=4, shuffle=False)())[0]
    assert list(features["a"]) == [0, 1, 2, 3] and list(target["a"]) == [-32, -31, -30, -29]
    with pytest.raises(ValueError, match="Index for x and y are mismatched"):
        pandas_input_fn(x, pd.Series(np.arange(4)), shuffle=False)
    with pytest.raises(ValueError, match="Cannot use name a for target column"):
        pandas_input_fn(x, y, shuffle=False, target_column="a")
    with pytest.raises(ValueError, match="shuffle must be provided"):
        pandas_input_fn(x, y)


def test_numpy_input_fn_gives_an_estimator_a_dataset(tmp_path):
    """The Estimator gets the Dataset (its position is checkpointed): training resumes where it stopped."""
    from npurun.estimator import EstimatorSpec, NPUEstimator

    def model_fn(features, labels, mode):
        step = tf.compat.v1.train.get_global_step()
        loss = tf.reduce_sum(features["x"])
        with tf.control_dependencies([loss]):  # a step only when a batch was read
            train_op = tf.compat.v1.assign_add(step, 1)
        return EstimatorSpec(mode, loss=loss, train_op=train_op)

    x = {"x": np.arange(10, dtype=np.float32).reshape(10, 1)}
    estimator = NPUEstimator(model_fn, model_dir=str(tmp_path))
    estimator.train(numpy_input_fn(x, np.zeros(10, np.float32), batch_size=2, shuffle=False), steps=100)
    assert estimator.get_variable_value("global_step") == 5  # one epoch of 5 batches, then the input ended
    assert any("Iterator" in name for name in estimator.get_variable_names())


def test_disable_v2_behavior_keeps_resource_variables_with_a_warning():
    # In a subprocess: disable_v2_behavior changes process-wide TensorFlow state.
    import subprocess

    code = textwrap.dedent("""\
        import warnings
        import npurun.compat
        npurun.compat.activate()
        import tensorflow.compat.v1 as tf
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tf.disable_v2_behavior()
            tf.disable_resource_variables()
        v = tf.get_variable("v", [1])
        print(type(v).__name__, tf.executing_eagerly(), len(caught), "keeps resource variables" in str(caught[0].message))
        npurun.compat.deactivate()
        tf.disable_resource_variables()
        print(type(tf.get_variable("w", [1])).__name__)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ResourceVariable", "False", "2", "True", "RefVariable"]
