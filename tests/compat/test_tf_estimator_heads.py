"""tf.estimator's heads and premade estimators as npurun provides them: losses as tf.estimator 2.15 reduces them,
export signatures, optimizer defaults, refusals, and their names in tf.estimator (the numbers against TF 2.15
itself are in test_tf_estimator_premade.py)."""
import numpy as np
import pytest
import tensorflow as tf

from npurun.tf_estimator import head as head_lib
from npurun.tf_estimator.canned import optimizers

from .conftest import run_compat

v1 = tf.compat.v1
LOGITS = np.array([[0.3], [-1.2], [2.0], [0.1]], np.float32)
LABELS = np.array([[1], [0], [0], [1]], np.int64)
WEIGHTS = np.array([1., 2., 0.5, 0.], np.float32)


def _run(fetches):
    with v1.Session() as session:
        session.run([v1.global_variables_initializer(), v1.local_variables_initializer(), v1.tables_initializer()])
        return session.run(fetches)


def _sigmoid_xent(labels, logits):
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


@pytest.mark.parametrize("reduction, expected", [
    ("sum_over_batch_size", lambda l: (l * WEIGHTS[:, None]).sum() / 4),
    ("sum", lambda l: (l * WEIGHTS[:, None]).sum())])
def test_binary_loss_reduction_and_weights(reduction, expected):
    with tf.Graph().as_default():
        head = head_lib.BinaryClassHead(weight_column="w", loss_reduction=reduction)
        loss = head.loss(LABELS, LOGITS, features={"w": WEIGHTS}, regularization_losses=[tf.constant(0.25)])
        assert _run(loss) == pytest.approx(expected(_sigmoid_xent(LABELS, LOGITS)) + 0.25, rel=1e-6)


def test_export_signatures_and_prediction_keys_of_each_head():
    with tf.Graph().as_default():
        features = {"x": tf.constant(LOGITS)}
        heads = {
            "binary": (head_lib.BinaryClassHead(label_vocabulary=["no", "yes"]), 1,
                       {"serving_default", "classification", "regression", "predict"},
                       {"logits", "logistic", "probabilities", "class_ids", "classes", "all_class_ids",
                        "all_classes"}),
            "multi": (head_lib.MultiClassHead(3), 3, {"serving_default", "classification", "predict"},
                      {"logits", "probabilities", "class_ids", "classes", "all_class_ids", "all_classes"}),
            "multilabel": (head_lib.MultiLabelHead(2), 2, {"serving_default", "classification", "predict"},
                           {"logits", "probabilities", "classes"}),
            "regression": (head_lib.RegressionHead(), 1, {"serving_default", "regression", "predict"},
                           {"predictions"}),
            "poisson": (head_lib.PoissonRegressionHead(), 1, {"serving_default", "regression", "predict"},
                        {"predictions", "logits"}),
        }
        for name, (head, dimension, signatures, keys) in heads.items():
            logits = tf.tile(features["x"], [1, dimension])
            spec = head.create_estimator_spec(features, "infer", logits)
            assert set(spec.export_outputs) == signatures, name
            assert set(spec.predictions) == keys, name
        binary = heads["binary"][0].create_estimator_spec(features, "infer", features["x"])
        classes, all_classes = _run([binary.predictions["classes"], binary.predictions["all_classes"]])
        assert classes.ravel().tolist() == [b"yes", b"no", b"yes", b"yes"]
        assert all_classes[0].tolist() == [b"no", b"yes"]


def test_multi_head_merges_heads_by_name():
    with tf.Graph().as_default():
        head = head_lib.MultiHead([head_lib.BinaryClassHead(name="b"), head_lib.RegressionHead(name="r")],
                                  head_weights=[1., 2.])
        assert head.name == "b_r" and head.logits_dimension == 2
        logits = tf.constant(np.concatenate([LOGITS, LOGITS * 2], axis=1))
        spec = head.create_estimator_spec({}, "infer", logits)
        assert set(spec.export_outputs) == {"serving_default", "b", "b/classification", "b/regression", "b/predict",
                                            "r", "r/regression", "r/predict", "predict"}
        assert ("b", "logistic") in spec.predictions and ("r", "predictions") in spec.predictions
        labels = {"b": LABELS, "r": np.ones((4, 1), np.float32)}
        loss = head.loss(labels, logits, features={})
        mse = ((LOGITS * 2 - 1) ** 2).mean()
        assert _run(loss) == pytest.approx(_sigmoid_xent(LABELS, LOGITS).mean() + 2 * mse, rel=1e-5)
        with pytest.raises(ValueError, match=r"labels has missing values for head\(s\): \['r'\]"):
            head.loss({"b": LABELS}, logits, features={})


def test_head_refusals_say_what_is_allowed():
    with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
        head_lib.BinaryClassHead(loss_reduction="none")
    with pytest.raises(ValueError, match=r"n_classes must be > 2: 2\."):
        head_lib.MultiClassHead(2)
    with pytest.raises(ValueError, match="loss_fn has unexpected args"):
        head_lib.RegressionHead(loss_fn=lambda labels, logits, extra: labels)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="You must provide a labels Tensor"):
        head_lib.BinaryClassHead().loss(None, LOGITS, features={})
    with tf.Graph().as_default(), pytest.raises(ValueError, match="not a tf.keras.optimizers.Optimizer"):
        head_lib.RegressionHead().create_estimator_spec({}, "train", tf.constant(LOGITS), labels=LOGITS,
                                                        optimizer=object(), trainable_variables=[])


def test_optimizer_names_defaults_and_conversions():
    import keras
    import tf_keras

    adagrad = optimizers.get_optimizer_instance_v2("Adagrad")  # TF 2.15: Adagrad's own default, 0.001
    assert isinstance(adagrad, tf_keras.optimizers.legacy.Adagrad)
    assert adagrad.get_config()["learning_rate"] == pytest.approx(0.001)
    assert optimizers.get_optimizer_instance_v2("Ftrl", 0.2).get_config()["learning_rate"] == pytest.approx(0.2)
    converted = optimizers.get_optimizer_instance_v2(keras.optimizers.Adam(learning_rate=0.02, beta_1=0.8))
    assert isinstance(converted, tf_keras.optimizers.legacy.Adam)
    assert converted.get_config()["beta_1"] == pytest.approx(0.8)
    assert isinstance(optimizers.get_optimizer_instance_v2(tf_keras.optimizers.SGD(0.1)),
                      tf_keras.optimizers.legacy.SGD)
    sgd = v1.train.GradientDescentOptimizer(0.1)
    assert optimizers.get_optimizer_instance_v2(lambda: sgd) is sgd
    with pytest.raises(ValueError, match=r"Unsupported optimizer name: Nadam\. Supported names are: \('Adagrad'"):
        optimizers.get_optimizer_instance_v2("Nadam")
    with pytest.raises(ValueError, match=r"uses \['weight_decay'\]"):
        optimizers.get_optimizer_instance_v2(keras.optimizers.Adam(weight_decay=0.1))
    with pytest.raises(ValueError, match="is a Keras 3 optimizer, which cannot run"):
        optimizers.get_optimizer_instance_v2(keras.optimizers.AdamW())


def test_tf_estimator_names_are_npurun_classes(active):
    from npurun.tf_estimator import canned

    assert tf.estimator.DNNClassifier is canned.DNNClassifier
    assert tf.compat.v1.estimator.LinearRegressor is canned.LinearRegressor
    assert tf.estimator.DNNLinearCombinedEstimator is canned.DNNLinearCombinedEstimator
    assert tf.estimator.BaselineEstimator is canned.BaselineEstimator
    assert tf.estimator.MultiHead is head_lib.MultiHead and tf.estimator.Head is head_lib.Head
    assert issubclass(canned.DNNClassifier, tf.estimator.Estimator)
    with pytest.raises(active.AdapterAPIError, match="boosted-trees estimators are not provided"):
        tf.estimator.BoostedTreesRegressor(feature_columns=[], n_batches_per_layer=1)
    assert tf.estimator.experimental.LinearSDCA is canned.LinearSDCA  # test_tf_estimator_premade_rules.py trains it


def test_premade_estimator_accepts_keras3_and_v1_optimizers(tmp_path):
    """A DNNClassifier with a TF 1 optimizer (the v1 premade estimators' kind) and a LinearRegressor with a
    Keras 3 optimizer train (global step advances) under `npurun run`."""
    script = tmp_path / "train.py"
    script.write_text(
        "import numpy as np\nimport keras\nimport tensorflow as tf\n"
        "x = np.random.RandomState(0).rand(16, 2).astype('float32')\n"
        "fn = lambda: tf.data.Dataset.from_tensor_slices(({'x': x}, (x[:, 0] > .5).astype('int64'))).batch(4)\n"
        "cols = [tf.feature_column.numeric_column('x', shape=(2,))]\n"
        "a = tf.estimator.DNNClassifier([3], cols, model_dir='a',\n"
        "                               optimizer=tf.compat.v1.train.AdagradOptimizer(0.1))\n"
        "a.train(fn, steps=3)\n"
        "b = tf.estimator.LinearRegressor(cols, model_dir='b', optimizer=keras.optimizers.SGD(0.1))\n"
        "b.train(fn, steps=2)\n"
        "print('STEPS', a.get_variable_value('global_step'), b.get_variable_value('global_step'),\n"
        "      sorted(n for n in a.get_variable_names() if 'Adagrad' in n)[:1])\n")
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "STEPS 3 2 ['dnn/hiddenlayer_0/bias/Adagrad']" in done.stdout
