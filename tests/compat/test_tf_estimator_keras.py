"""tf.keras.estimator.model_to_estimator for tf-keras models, as tf.estimator 2.15's keras_lib behaves:
the compiled loss, metrics (eval_metric_ops under the Keras names) and optimizer, predictions by output
name, warm start from the Keras weights, object-based or name-based checkpoints, export."""
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from npurun.tf_estimator.keras import model_to_estimator, model_to_estimator_v1

pytestmark = pytest.mark.usefixtures("single_process")

RNG = np.random.RandomState(0)
X = RNG.rand(64, 4).astype("float32")
Y_CLASS = (X[:, 0] + X[:, 1] > X[:, 2] + X[:, 3]).astype("int64")
Y_REG = (X @ np.array([1.0, -2.0, 0.5, 3.0], "float32"))[:, None]


def _functional():
    keras.utils.set_random_seed(0)  # the Keras weights the Estimator starts from
    inputs = keras.Input((4,), name="feats")
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    outputs = keras.layers.Dense(2, activation="softmax", name="probs")(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy", keras.metrics.SparseCategoricalAccuracy(name="sca")])
    return model


def _sequential():
    keras.utils.set_random_seed(0)
    # Named: Keras numbers unnamed layers per process, so the names would depend on the tests run before.
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,), name="dense"),
                              keras.layers.BatchNormalization(name="batch_normalization"),
                              keras.layers.Dense(1, name="dense_1")])
    model.compile(keras.optimizers.legacy.Adam(0.05), "mse", metrics=["mae"])
    return model


def _class_input(repeat=True):
    dataset = tf.data.Dataset.from_tensor_slices(({"feats": X}, Y_CLASS)).batch(16)
    return dataset.repeat() if repeat else dataset


def _reg_input():
    return tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(16)


@pytest.mark.slow
def test_a_functional_model_trains_evaluates_predicts_and_exports(tmp_path):
    model = _functional()
    before = model.predict(X[:4], verbose=0)
    est = model_to_estimator(keras_model=model, model_dir=str(tmp_path / "m"))
    # Warm-started from the Keras model's weights: the same predictions before any training.
    first = [p["probs"] for p, _ in zip(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"feats": X[:4]})
                                                     .batch(4)), range(4))]
    np.testing.assert_allclose(np.stack(first), before, rtol=1e-5, atol=1e-6)
    start = est.evaluate(lambda: _class_input(False))
    est.train(lambda: _class_input(), steps=60)
    end = est.evaluate(lambda: _class_input(False))
    # tf.estimator 2.15's keys (checked in its venv): the Keras metric names, loss, global_step.
    assert sorted(end) == ["accuracy", "global_step", "loss", "sca"]
    assert end["global_step"] == 60 and end["loss"] < start["loss"] * 0.5 and end["accuracy"] == end["sca"]
    # checkpoint_format='checkpoint': object-based keys, as tf.train.Checkpoint / model.save_weights write them.
    names = est.get_variable_names()
    assert "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE" in names  # the optimizer's state, as in TF 2.15
    est.train(lambda: _class_input(), steps=10)  # resumes from the object-based checkpoint
    assert est.get_variable_value("estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE") == 70
    export = est.export_saved_model(str(tmp_path / "export"), _serving)
    loaded = tf.saved_model.load(os.fsdecode(export))
    served = loaded.signatures["serving_default"](feats=tf.constant(X[:4]))
    assert sorted(served) == ["probs"]


def _serving():
    from npurun.estimator.export import build_raw_serving_input_receiver_fn

    return build_raw_serving_input_receiver_fn({"feats": tf.compat.v1.placeholder(tf.float32, [None, 4])})()


@pytest.mark.slow
def test_a_sequential_model_with_saver_checkpoints_and_renamed_metrics(tmp_path):
    model = _sequential()
    est = model_to_estimator_v1(keras_model=model, model_dir=str(tmp_path), metric_names_map={"mae": "mean_abs"})
    start = est.evaluate(_reg_input)
    est.train(lambda: _reg_input().repeat(), steps=80)
    end = est.evaluate(_reg_input)
    assert sorted(end) == ["global_step", "loss", "mean_abs"] and end["loss"] < start["loss"] * 0.5
    names = est.get_variable_names()
    # 'saver' (tf.compat.v1's default): name-based, the layers' variable names; batch-norm statistics trained.
    assert "dense/kernel" in names and "batch_normalization/moving_mean" in names
    assert not np.allclose(est.get_variable_value("batch_normalization/moving_mean"), 0)
    predictions = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(X[:3]).batch(3)))
    assert len(predictions) == 3 and list(predictions[0]) == ["dense_1"]


def test_arguments_are_checked_in_tf_estimators_words(tmp_path):
    with pytest.raises(ValueError, match="Either `keras_model` or `keras_model_path` needs to be provided"):
        model_to_estimator()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    with pytest.raises(ValueError, match="has not been compiled yet"):
        model_to_estimator(model, model_dir=str(tmp_path))
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match='Checkpoint format must be one of "checkpoint" or "saver"'):
        model_to_estimator(model, checkpoint_format="h5")
    with pytest.raises(ValueError, match="Invalid `metric_names_map`"):
        est = model_to_estimator(_sequential(), model_dir=str(tmp_path / "m"), metric_names_map={"other": "x"})
        est.evaluate(_reg_input, steps=1)


def test_a_keras_3_model_is_refused_with_the_tf_keras_way():
    keras3 = pytest.importorskip("keras")
    if not keras3.__version__.startswith("3"):
        pytest.fail(f"Keras 3 expected in this environment, found {keras3.__version__}")
    model = keras3.Sequential([keras3.Input((2,)), keras3.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"Keras 3 model .*import tf_keras as keras.*TF_USE_LEGACY_KERAS=1"):
        model_to_estimator(model)


@pytest.mark.slow
def test_a_multi_output_model_names_its_metrics_by_output_as_tf_estimator_did(tmp_path):
    first, second = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    reg = keras.layers.Dense(1, name="reg")(keras.layers.concatenate([first, second]))
    cls = keras.layers.Dense(1, activation="sigmoid", name="cls")(first)
    model = keras.Model([first, second], [reg, cls])
    model.compile(keras.optimizers.legacy.Adam(0.01), loss={"reg": "mse", "cls": "binary_crossentropy"},
                  metrics={"reg": ["mae"], "cls": ["accuracy"]})
    est = model_to_estimator(model, model_dir=str(tmp_path))

    def input_fn():
        labels = {"reg": Y_REG, "cls": Y_CLASS[:, None].astype("float32")}
        return tf.data.Dataset.from_tensor_slices(({"a": X, "b": X}, labels)).batch(16)

    est.train(input_fn, steps=2)
    # TF 2.15 (its venv): {'cls_accuracy', 'reg_mae', 'loss', 'global_step'}
    assert sorted(est.evaluate(input_fn)) == ["cls_accuracy", "global_step", "loss", "reg_mae"]
    with pytest.raises(KeyError, match=r"missing \['b'\]"):
        est.train(lambda: tf.data.Dataset.from_tensor_slices(({"a": X}, {"reg": Y_REG, "cls": Y_REG})).batch(16),
                  steps=1)


def test_a_model_compiled_with_a_tensorflow_1_optimizer_trains(tmp_path):
    # TF 1-era code compiles with tf.compat.v1.train optimizers (tf-keras wraps them as TFOptimizer, which has no
    # get_config); tf.estimator trained with the optimizer itself, its slots in the Estimator's graph
    model = _functional()
    model.compile(optimizer=tf.compat.v1.train.RMSPropOptimizer(0.01), loss="sparse_categorical_crossentropy")
    model.fit(X, Y_CLASS, epochs=1, verbose=0)  # fit first, as such scripts do
    est = model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    start = est.evaluate(lambda: _class_input(False))
    est.train(lambda: _class_input(), steps=40)
    end = est.evaluate(lambda: _class_input(False))
    assert end["global_step"] == 40 and end["loss"] < start["loss"]
    names = est.get_variable_names()
    assert any(".OPTIMIZER_SLOT/optimizer/rms/" in name for name in names)  # the slots are checkpointed
    est.train(lambda: _class_input(), steps=5)  # resumes: the same optimizer builds its slots in a new graph
    assert est.get_variable_value("estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE") == 45


def test_a_dict_output_model_exports_before_training_with_tensorflows_export_outputs(tmp_path):
    # outputs={'c': .., 'd': ..} (Keras flattens them in output_names' order); export_outputs given as TensorFlow's
    # own model_utils classes (tf.estimator 2.15's tf.estimator.export.*Output were those); exported straight after
    # model_to_estimator, from the Keras weights (their checkpoint has no global step)
    from tensorflow.python.saved_model.model_utils import export_output

    from npurun.estimator.export import build_parsing_serving_input_receiver_fn

    keras.utils.set_random_seed(0)
    a, b = keras.Input((1,), name="a"), keras.Input((1,), name="b")
    model = keras.Model({"a": a, "b": b}, {"c": keras.layers.Dense(1, name="c")(a),
                                           "d": keras.layers.Dense(1, activation="sigmoid", name="d")(b)})
    model.compile("sgd", {"c": "mse", "d": "binary_crossentropy"})
    est = model_to_estimator(keras_model=model, model_dir=str(tmp_path / "m"),
                             export_outputs={"c": export_output.RegressionOutput,
                                             "d": export_output.ClassificationOutput})
    features = {"a": tf.io.FixedLenFeature([1], tf.float32), "b": tf.io.FixedLenFeature([1], tf.float32)}
    exported = est.export_saved_model(str(tmp_path / "export"), build_parsing_serving_input_receiver_fn(features))
    variables = os.path.join(os.fsdecode(exported), "variables", "variables")
    kernel = [name for name, _ in tf.train.list_variables(variables) if name.startswith("layer_with_weights-0/kernel")]
    np.testing.assert_allclose(tf.train.load_variable(variables, kernel[0]), model.get_layer("c").kernel.numpy())
    assert {"c", "d", "serving_default"} <= set(tf.saved_model.load(os.fsdecode(exported)).signatures)
