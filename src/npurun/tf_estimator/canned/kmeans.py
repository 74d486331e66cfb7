"""`tf.compat.v1.estimator.experimental.KMeans` (tf.estimator 2.15's `KMeansClustering`, v1 only): k-means
on TensorFlow 2.21's own clustering ops (`tensorflow.python.ops.clustering_ops.KMeans`: random or k-means++
initialisation, full-batch or mini-batch Lloyd steps, squared-Euclidean or cosine distance), with tf.estimator's
signature, defaults, constants and methods (`cluster_centers`, `predict_cluster_index`, `score`, `transform`).
Training: one step per batch; the centers are initialised by a hook once the session exists (over the first
batch, or `initial_clusters` given as an array or a function of (inputs, num_clusters)); `relative_tolerance`
stops training once the loss's relative change falls below it. The centers variable is `clusters`."""
from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import clustering_ops

from ...estimator.export_output import PredictOutput
from ...estimator.spec import EstimatorSpec, ModeKeys
from ._common import estimator_base, feature_column_quiet

_v1 = tf.compat.v1


class _InitializeClustersHook(_v1.train.SessionRunHook):
    """Runs the centers' initialisation op until the centers are initialised (the chief's job)."""

    def __init__(self, init_op, is_initialized_var, is_chief):
        self._init_op, self._is_initialized_var, self._is_chief = init_op, is_initialized_var, is_chief

    def after_create_session(self, session, coord):
        del coord
        import time

        while not session.run(self._is_initialized_var):
            if self._is_chief:
                session.run(self._init_op)
            else:
                time.sleep(1)


class _LossRelativeChangeHook(_v1.train.SessionRunHook):
    """Requests a stop once |loss - previous loss| / (1 + |previous loss|) < tolerance."""

    def __init__(self, loss_tensor, tolerance):
        self._loss_tensor, self._tolerance, self._prev_loss = loss_tensor, tolerance, None

    def before_run(self, run_context):
        del run_context
        return _v1.train.SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        loss = run_values.results
        if self._prev_loss is not None and abs(loss - self._prev_loss) / (1 + abs(self._prev_loss)) < self._tolerance:
            run_context.request_stop()
        self._prev_loss = loss


def _parse_features_if_necessary(features, feature_columns):
    """The [batch, dim] input points: the features tensor, or a dict's columns through `feature_columns`
    (tf.compat.v1.feature_column.input_layer) or concatenated when no columns are given."""
    if isinstance(features, dict):
        if feature_columns:
            with feature_column_quiet():
                return _v1.feature_column.input_layer(features, list(feature_columns))
        return tf.concat([tf.convert_to_tensor(features[key]) for key in sorted(features)], axis=1)
    if feature_columns:
        raise ValueError("feature_columns need the features as a dict of tensors; got a single tensor")
    return tf.convert_to_tensor(features)


_Estimator = estimator_base()


class KMeansClustering(_Estimator):
    """An Estimator for k-means clustering (`tf.compat.v1.estimator.experimental.KMeans`)."""

    SQUARED_EUCLIDEAN_DISTANCE = clustering_ops.SQUARED_EUCLIDEAN_DISTANCE
    COSINE_DISTANCE = clustering_ops.COSINE_DISTANCE
    RANDOM_INIT = clustering_ops.RANDOM_INIT
    KMEANS_PLUS_PLUS_INIT = clustering_ops.KMEANS_PLUS_PLUS_INIT
    SCORE = "score"
    CLUSTER_INDEX = "cluster_index"
    ALL_DISTANCES = "all_distances"
    CLUSTER_CENTERS_VAR_NAME = clustering_ops.CLUSTERS_VAR_NAME

    def __init__(self, num_clusters, model_dir=None, initial_clusters=RANDOM_INIT,
                 distance_metric=SQUARED_EUCLIDEAN_DISTANCE, seed=None, use_mini_batch=True,
                 mini_batch_steps_per_iteration=1, kmeans_plus_plus_num_retries=2, relative_tolerance=None,
                 config=None, feature_columns=None):
        if isinstance(initial_clusters, str) and initial_clusters not in (self.RANDOM_INIT,
                                                                          self.KMEANS_PLUS_PLUS_INIT):
            raise ValueError(f"Unsupported initialization algorithm '{initial_clusters}'; allowed: "
                             f"'{self.RANDOM_INIT}', '{self.KMEANS_PLUS_PLUS_INIT}', an array or a function")
        if distance_metric not in (self.SQUARED_EUCLIDEAN_DISTANCE, self.COSINE_DISTANCE):
            raise ValueError(f"Unsupported distance metric '{distance_metric}'; allowed: "
                             f"'{self.SQUARED_EUCLIDEAN_DISTANCE}', '{self.COSINE_DISTANCE}'")
        if isinstance(initial_clusters, (np.ndarray, list, tuple)) or tf.is_tensor(initial_clusters):
            initial_clusters = np.asarray(initial_clusters, dtype=np.float32) if not tf.is_tensor(
                initial_clusters) else initial_clusters
        settings = dict(num_clusters=num_clusters, initial_clusters=initial_clusters,
                        distance_metric=distance_metric, seed=seed, use_mini_batch=use_mini_batch,
                        mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
                        kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries,
                        relative_tolerance=relative_tolerance, feature_columns=feature_columns)

        def model_fn(features, mode, config):
            return _model_fn(features, mode, config, **settings)

        self._distance_metric = distance_metric
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)

    def cluster_centers(self):
        """The cluster centers, [num_clusters, dim]."""
        return self.get_variable_value(self.CLUSTER_CENTERS_VAR_NAME)

    def predict_cluster_index(self, input_fn):
        """Yields the index of each input point's closest center."""
        for index in self.predict(input_fn=input_fn, predict_keys=[self.CLUSTER_INDEX]):
            yield index[self.CLUSTER_INDEX]

    def score(self, input_fn):
        """The sum of the squared distances (or cosine distances) of one batch's points to their nearest
        centers (evaluates one step, as tf.estimator's)."""
        return self.evaluate(input_fn=input_fn, steps=1)[self.SCORE]

    def transform(self, input_fn):
        """Yields each input point's distance to every center: the Euclidean distance (the square root of the
        ALL_DISTANCES prediction) for SQUARED_EUCLIDEAN_DISTANCE, the cosine distance for COSINE_DISTANCE."""
        for distances in self.predict(input_fn=input_fn, predict_keys=[self.ALL_DISTANCES]):
            distances = distances[self.ALL_DISTANCES]
            if self._distance_metric == self.SQUARED_EUCLIDEAN_DISTANCE:
                distances = np.sqrt(np.maximum(distances, 0))
            yield distances


def _model_fn(features, mode, config, num_clusters, initial_clusters, distance_metric, seed, use_mini_batch,
              mini_batch_steps_per_iteration, kmeans_plus_plus_num_retries, relative_tolerance, feature_columns):
    inputs = _parse_features_if_necessary(features, feature_columns)
    if isinstance(initial_clusters, np.ndarray):
        initial_clusters = tf.constant(initial_clusters)
    (all_distances, model_predictions, losses, is_initialized, init_op,
     training_op) = clustering_ops.KMeans(
        inputs, num_clusters, initial_clusters=initial_clusters, distance_metric=distance_metric,
        use_mini_batch=use_mini_batch, mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
        random_seed=seed, kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries).training_graph()
    loss = tf.reduce_sum(losses)
    _v1.summary.scalar("loss/raw", loss)
    predictions = {KMeansClustering.ALL_DISTANCES: all_distances[0],
                   KMeansClustering.CLUSTER_INDEX: model_predictions[0]}
    if mode == ModeKeys.PREDICT:
        export_outputs = {KMeansClustering.ALL_DISTANCES: PredictOutput(all_distances[0]),
                          KMeansClustering.CLUSTER_INDEX: PredictOutput(model_predictions[0]),
                          "serving_default": PredictOutput(model_predictions[0])}
        return EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
    hooks = [_InitializeClustersHook(init_op, is_initialized, config.is_chief)]
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={KMeansClustering.SCORE: _v1.metrics.mean(loss)},
                             evaluation_hooks=hooks)
    increment = _v1.assign_add(_v1.train.get_global_step(), 1)
    with tf.control_dependencies([training_op, increment]):
        train_op = tf.identity(loss)
    if relative_tolerance is not None:
        hooks.append(_LossRelativeChangeHook(loss, relative_tolerance))
    return EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)
