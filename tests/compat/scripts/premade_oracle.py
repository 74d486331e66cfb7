"""TF 2.15-era premade-estimator code, run unchanged by TensorFlow 2.15's own tf.estimator and by
`npurun run` (tests/compat/test_tf_estimator_premade.py compares the two).

`premade_oracle.py WORK_DIR CKPT_DIR [--reference]`: for each premade estimator below, trains 3
steps from scratch in WORK_DIR (its variable names and shapes are observed), then trains 3 more
steps from the step-3 checkpoint TF 2.15 wrote (`CKPT_DIR/<name>`, copied there by the --reference
run), evaluates and predicts. Prints one JSON line: names/shapes, variable values, metrics and predictions.
"""
import json
import os
import shutil
import sys

import numpy as np
import tensorflow as tf

work_dir, ckpt_dir = sys.argv[1:3]
reference = "--reference" in sys.argv
fc = tf.feature_column
rng = np.random.RandomState(0)
N = 32
X = rng.rand(N, 3).astype(np.float32)
C = rng.randint(0, 4, size=(N,)).astype(np.int64)
S = np.array([["a", "b", "c"][i % 3] for i in range(N)])
W = (1. + rng.rand(N)).astype(np.float32)
Y2 = (X[:, 0] + 0.3 * (C == 1) > 0.6).astype(np.int64)
Y3 = (X[:, 0] * 3).astype(np.int64).clip(0, 2)
YR = (X[:, 0] * 2. - X[:, 1] + 0.5 * (S == "b")).astype(np.float32)
YM = np.stack([Y2, (X[:, 1] > 0.5).astype(np.int64), (C >= 2).astype(np.int64)], axis=1)
YP = rng.poisson(1. + 2. * X[:, 0]).astype(np.float32)
FEATURES = {"x": X, "c": C, "s": S, "w": W}

x_col = fc.numeric_column("x", shape=(3,))
c_col = fc.categorical_column_with_identity("c", 4)
s_col = fc.categorical_column_with_vocabulary_list("s", ["a", "b", "c"])
cross = fc.crossed_column([s_col, c_col], hash_bucket_size=7)
linear_cols = [x_col, c_col, s_col, cross]
dnn_cols = [x_col, fc.embedding_column(c_col, 2), fc.indicator_column(s_col)]
est = tf.estimator
STRING_LABELS = np.array(["lo", "mid", "hi"])[Y3]

CASES = {
    "dnn_classifier": (lambda d: est.DNNClassifier([4, 3], dnn_cols, model_dir=d), Y2),
    "dnn_classifier_vocab3": (lambda d: est.DNNClassifier([4], dnn_cols, n_classes=3, model_dir=d,
                                                          label_vocabulary=["lo", "mid", "hi"]), STRING_LABELS),
    "dnn_regressor": (lambda d: est.DNNRegressor([5], dnn_cols, weight_column="w", model_dir=d,
                                                 optimizer=lambda: tf.keras.optimizers.legacy.Adam(0.01)), YR),
    "dnn_multilabel": (lambda d: est.DNNEstimator(est.MultiLabelHead(3), [4], dnn_cols, model_dir=d), YM),
    "dnn_multihead": (lambda d: est.DNNEstimator(est.MultiHead([est.BinaryClassHead(name="b"),
                                                                 est.RegressionHead(name="r")], head_weights=[1., .5]),
                                                 [3], dnn_cols, model_dir=d), {"b": Y2, "r": YR}),
    "linear_classifier": (lambda d: est.LinearClassifier(linear_cols, model_dir=d), Y2),
    "linear_classifier3_mean": (lambda d: est.LinearClassifier(linear_cols, n_classes=3, model_dir=d,
                                                               sparse_combiner="mean"), Y3),
    "linear_regressor": (lambda d: est.LinearRegressor(linear_cols, weight_column="w", model_dir=d), YR),
    "linear_poisson": (lambda d: est.LinearEstimator(est.PoissonRegressionHead(), [x_col, s_col], model_dir=d), YP),
    "combined_classifier": (lambda d: est.DNNLinearCombinedClassifier(
        linear_feature_columns=linear_cols, dnn_feature_columns=dnn_cols, dnn_hidden_units=[4], model_dir=d), Y2),
    "combined_regressor": (lambda d: est.DNNLinearCombinedRegressor(
        linear_feature_columns=[x_col, s_col], dnn_feature_columns=dnn_cols, dnn_hidden_units=[3], model_dir=d), YR),
    "baseline_classifier": (lambda d: est.BaselineClassifier(n_classes=3, model_dir=d), Y3),
    "baseline_regressor": (lambda d: est.BaselineRegressor(model_dir=d), YR),
    "baseline_logistic": (lambda d: est.BaselineEstimator(est.LogisticRegressionHead(), model_dir=d), X[:, 2]),
}


def input_fn(labels, repeat, single_feature):
    def fn():
        features = {"x": X} if single_feature else FEATURES
        dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)
        return dataset.repeat() if repeat else dataset
    return fn


def copy_checkpoint(source, target, step):
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        if name.startswith(f"model.ckpt-{step}."):
            shutil.copy(os.path.join(source, name), target)
    with open(os.path.join(target, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "model.ckpt-{step}"\nall_model_checkpoint_paths: "model.ckpt-{step}"\n')


def plain(value):
    value = np.asarray(value)
    if value.dtype.kind in "SOU":
        return [v.decode() if isinstance(v, bytes) else str(v) for v in value.ravel().tolist()]
    return value.astype(np.float64).ravel().tolist()


config = tf.estimator.RunConfig(tf_random_seed=3, save_checkpoints_steps=3)
observed = {}
for name, (make, labels) in CASES.items():
    single = name.startswith("baseline")  # TF 2.15's baseline cannot read a multi-feature tf.data input
    fresh, continued = os.path.join(work_dir, "fresh", name), os.path.join(work_dir, "continued", name)
    ckpt3 = os.path.join(ckpt_dir, name)
    make(fresh).train(input_fn(labels, True, single), steps=3)
    names = {n: list(tf.train.load_variable(fresh, n).shape) for n, _ in tf.train.list_variables(fresh)
             if not n.endswith("_STATE")}
    if reference:
        copy_checkpoint(fresh, ckpt3, 3)
    copy_checkpoint(ckpt3, continued, 3)
    estimator = make(continued)
    estimator.train(input_fn(labels, True, single), steps=3)
    metrics = {k: float(v) for k, v in estimator.evaluate(input_fn(labels, False, single)).items()}
    values = {n: plain(estimator.get_variable_value(n)) for n in estimator.get_variable_names()
              if not n.endswith("_STATE")}
    features_only = lambda: tf.data.Dataset.from_tensor_slices({"x": X[:4]} if single else  # noqa: E731
                                                               {k: v[:4] for k, v in FEATURES.items()}).batch(4)
    predictions = [{"/".join(k) if isinstance(k, tuple) else k: plain(v) for k, v in p.items()}
                   for p in estimator.predict(features_only)]
    observed[name] = {"names": names, "values": values, "metrics": metrics, "predictions": predictions}
# The TF 1-era module paths libraries import heads and helpers from.
from tensorflow.python.estimator.canned import dnn, dnn_linear_combined, linear  # noqa: E402
from tensorflow_estimator.python.estimator.canned import head as head_v1  # noqa: E402
from tensorflow_estimator.python.estimator.canned import metric_keys, optimizers, prediction_keys  # noqa: E402
from tensorflow_estimator.python.estimator.head import binary_class_head, multi_head, regression_head  # noqa: E402

with tf.Graph().as_default():
    logits = tf.constant([[0.3], [-1.2], [2.0]])
    labels = tf.constant([[1], [0], [0]])
    loss_spec = head_v1._binary_logistic_head_with_sigmoid_cross_entropy_loss().create_loss(
        features={}, mode="train", logits=logits, labels=labels)
    head_loss = binary_class_head.BinaryClassHead().loss(labels, logits, features={})
    poisson = regression_head.PoissonRegressionHead().loss(tf.constant([[2.], [0.], [1.]]), logits, features={})
    with tf.compat.v1.Session() as session:
        losses = session.run([loss_spec.training_loss, head_loss, poisson])
observed["imports"] = {
    "classes": [c.__name__ for c in (dnn.DNNClassifier, linear.LinearRegressor,
                                     dnn_linear_combined.DNNLinearCombinedClassifier, multi_head.MultiHead)],
    "keys": [metric_keys.MetricKeys.AUC_PR, metric_keys.MetricKeys.ACCURACY_AT_THRESHOLD % 0.5,
             prediction_keys.PredictionKeys.ALL_CLASSES],
    "adagrad": optimizers.get_optimizer_instance_v2("Adagrad").get_config()["learning_rate"],
    "losses": [float(v) for v in losses]}
print("RESULT " + json.dumps(observed))
