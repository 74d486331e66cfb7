"""tf.compat.v1.estimator.experimental.KMeans and the v1 logit_fn builders (tf.estimator 2.15 exported them;
npurun lacked them): train, score, predict, transform and export KMeans on two well-separated blobs, and a
custom model_fn built on dnn_logit_fn_builder / linear_logit_fn_builder."""
import os

import numpy as np
import pytest
import tensorflow as tf

RNG = np.random.RandomState(0)
POINTS = np.concatenate([RNG.randn(40, 2) * 0.3 + [4., 4.], RNG.randn(40, 2) * 0.3 - [4., 4.]]).astype(np.float32)


def _all_points():
    return tf.data.Dataset.from_tensors(POINTS).repeat()


def _batches():
    return tf.data.Dataset.from_tensor_slices(POINTS).batch(80)


@pytest.fixture
def kmeans(active, tmp_path):
    estimator = tf.compat.v1.estimator.experimental.KMeans(num_clusters=2, model_dir=str(tmp_path / "km"), seed=3,
                                                           use_mini_batch=False)
    estimator.train(_all_points, steps=3)
    return estimator


def test_kmeans_finds_the_blobs_and_scores_them(kmeans):
    centers = sorted(kmeans.cluster_centers().tolist())
    np.testing.assert_allclose(centers, [[-4., -4.], [4., 4.]], atol=0.2)
    squared = ((POINTS[:, None, :] - np.asarray(centers)[None]) ** 2).sum(-1).min(1).sum()
    assert kmeans.score(_all_points) == pytest.approx(squared, rel=0.05)
    assert kmeans.get_variable_value("global_step") == 3


def test_kmeans_predicts_indices_and_euclidean_distances(kmeans):
    indices = np.array(list(kmeans.predict_cluster_index(_batches)))
    assert len(set(indices[:40])) == 1 and len(set(indices[40:])) == 1 and indices[0] != indices[-1]
    distances = np.array(list(kmeans.transform(_batches)))
    expected = np.sqrt(((POINTS[:, None, :] - kmeans.cluster_centers()[None]) ** 2).sum(-1))
    np.testing.assert_allclose(distances, expected, rtol=1e-3, atol=1e-3)


def test_kmeans_exports_its_signatures(kmeans, tmp_path):
    def serving():
        points = tf.compat.v1.placeholder(tf.float32, [None, 2])
        return tf.estimator.export.TensorServingInputReceiver(points, points)
    path = kmeans.export_saved_model(str(tmp_path / "export"), serving)
    loaded = tf.saved_model.load(os.fsdecode(path))
    assert {"serving_default", "cluster_index", "all_distances"} <= set(loaded.signatures)
    out = loaded.signatures["serving_default"](tf.constant(POINTS[:1]))
    assert list(out.values())[0].numpy()[0] == next(kmeans.predict_cluster_index(_batches))


def test_kmeans_rejects_unknown_choices(active):
    KMeans = tf.compat.v1.estimator.experimental.KMeans
    with pytest.raises(ValueError, match="initialization algorithm 'bogus'"):
        KMeans(2, initial_clusters="bogus")
    with pytest.raises(ValueError, match="distance metric 'manhattan'"):
        KMeans(2, distance_metric="manhattan")


def test_logit_fn_builders_in_a_custom_model_fn(active, tmp_path):
    experimental = tf.compat.v1.estimator.experimental
    columns = [tf.feature_column.numeric_column("x", shape=[2])]
    dnn_fn = experimental.dnn_logit_fn_builder(1, (4,), columns, tf.nn.relu, None, None, False)
    linear_fn = experimental.linear_logit_fn_builder(1, columns)

    def model_fn(features, labels, mode):
        with tf.compat.v1.variable_scope("dnn"):
            logits = dnn_fn(features, mode)
        with tf.compat.v1.variable_scope("linear"):
            logits += linear_fn(features)
        loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
        train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=logits)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": POINTS}, POINTS.sum(1, keepdims=True))).repeat().batch(16)
    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "logits"))
    estimator.train(input_fn, steps=2)
    names = set(estimator.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/logits/kernel", "dnn/logits/bias",
            "linear/linear_model/x/weights", "linear/linear_model/bias_weights"} <= names
    with pytest.raises(ValueError, match="units must be an int"):
        experimental.dnn_logit_fn_builder(1.5, (4,), columns, tf.nn.relu, None, None, False)


def _sequences():
    tokens = tf.sparse.from_dense(tf.constant([[1., 2., 3.], [3., 2., 0.], [0.5, 0., 0.], [2., 2., 2.]]))
    return tf.data.Dataset.from_tensors(({"tokens": tokens}, tf.constant([[1], [0], [0], [1]]))).repeat(8)


def test_rnn_classifier_trains_evaluates_predicts(active, tmp_path):
    column = tf.feature_column.sequence_numeric_column("tokens")
    classifier = tf.estimator.experimental.RNNClassifier(sequence_feature_columns=[column], units=[3],
                                                         cell_type="gru", model_dir=str(tmp_path / "rnn"))
    classifier.train(_sequences, steps=2)
    metrics = classifier.evaluate(_sequences, steps=1)
    assert metrics["global_step"] == 2 and 0. <= metrics["accuracy"] <= 1.
    prediction = next(classifier.predict(_sequences))
    assert prediction["probabilities"].shape == (2,)
    assert {"rnn/gru_cell/kernel", "rnn/gru_cell/recurrent_kernel", "logits/kernel"} <= set(
        classifier.get_variable_names())


def test_rnn_refusals_name_why(active):
    column = tf.feature_column.sequence_numeric_column("tokens")
    experimental = tf.estimator.experimental
    with pytest.raises(NotImplementedError, match="return_sequences=True"):
        experimental.RNNClassifier([column], units=[2], return_sequences=True)
    with pytest.raises(ValueError, match="units and cell_type must not be specified"):
        experimental.RNNClassifier([column], units=[2], rnn_cell_fn=lambda: None)
    with pytest.raises(ValueError, match="cell_type must be one of"):
        experimental.RNNClassifier([column], units=[2], cell_type="transformer")


def test_rnn_with_a_static_batch_size_of_one(active, tmp_path):
    """A batch whose size is known in the graph (here 1): the masked state keeps its shape in Keras's loop."""
    def one_sequence():
        tokens = tf.sparse.from_dense(tf.constant([[1., 2., 3.]]))
        return tf.data.Dataset.from_tensors(({"tokens": tokens}, tf.constant([[1]]))).repeat(4)
    column = tf.feature_column.sequence_numeric_column("tokens")
    classifier = tf.estimator.experimental.RNNClassifier([column], units=[2], model_dir=str(tmp_path / "one"))
    classifier.train(one_sequence, steps=1)
    assert classifier.get_variable_value("global_step") == 1
