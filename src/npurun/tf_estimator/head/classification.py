"""`tf.estimator.BinaryClassHead`, `MultiClassHead` and `MultiLabelHead` (tf.estimator 2.15's semantics)."""
from __future__ import annotations

import tensorflow as tf

from . import base
from .base import (CLASSIFY_SERVING_KEY, DEFAULT_SERVING_KEY, PREDICT_SERVING_KEY, REGRESS_SERVING_KEY,
                   SUM_OVER_BATCH_SIZE, Head, PredictOutput, RegressionOutput, keras)
from .keys import MetricKeys as _K
from .keys import PredictionKeys as _P

_v1 = tf.compat.v1


class _Vocabulary:
    """Label strings <-> class ids through lookup tables made in the graph being built."""

    def _class_id_table(self):
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(list(self._label_vocabulary)),
                                                tf.range(len(self._label_vocabulary), dtype=tf.int64)),
            default_value=-1, name="class_id_lookup")

    def _class_string_table(self):
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.range(len(self._label_vocabulary), dtype=tf.int64),
                                                tf.constant(list(self._label_vocabulary))),
            default_value="UNK", name="class_string_lookup")


def _check_vocabulary(label_vocabulary):
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}")


def _check_thresholds(thresholds, message):
    thresholds = tuple(thresholds) if thresholds else tuple()
    for threshold in thresholds:
        if threshold <= 0. or threshold >= 1.:
            raise ValueError(message.format(threshold=threshold, thresholds=(thresholds,)))
    return thresholds


def _head_name_scope(name):
    return tf.name_scope(name or "head")


class BinaryClassHead(_Vocabulary, base.WeightedLoss, Head):
    """Binary classification with a sigmoid cross-entropy loss; labels 0/1 or, with `label_vocabulary`,
    two strings. Metrics: accuracy, precision, recall, auc, auc_precision_recall, average_loss,
    label/mean, prediction/mean, accuracy_baseline (and per-threshold accuracy/precision/recall)."""

    def __init__(self, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, name=None):
        _check_vocabulary(label_vocabulary)
        thresholds = _check_thresholds(thresholds, "thresholds not in (0, 1): {thresholds}.")
        base.validate_loss_reduction(loss_reduction)
        if loss_fn:
            base.validate_loss_fn_args(loss_fn)
        self._weight_column = weight_column
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name
        key = self._summary_key
        self._loss_mean_key = key(_K.LOSS_MEAN)
        self._accuracy_key = key(_K.ACCURACY)
        self._precision_key = key(_K.PRECISION)
        self._recall_key = key(_K.RECALL)
        self._prediction_mean_key = key(_K.PREDICTION_MEAN)
        self._label_mean_key = key(_K.LABEL_MEAN)
        self._accuracy_baseline_key = key(_K.ACCURACY_BASELINE)
        self._auc_key = key(_K.AUC)
        self._auc_pr_key = key(_K.AUC_PR)
        self._loss_regularization_key = key(_K.LOSS_REGULARIZATION)
        self._accuracy_keys = tuple(key(_K.ACCURACY_AT_THRESHOLD % t) for t in thresholds)
        self._precision_keys = tuple(key(_K.PRECISION_AT_THRESHOLD % t) for t in thresholds)
        self._recall_keys = tuple(key(_K.RECALL_AT_THRESHOLD % t) for t in thresholds)

    @property
    def name(self):
        return self._name

    @property
    def logits_dimension(self):
        return 1

    @property
    def loss_reduction(self):
        return self._loss_reduction

    def _processed_labels(self, logits, labels):
        labels = base.check_dense_labels_match_logits_and_reshape(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = self._class_id_table().lookup(labels)
        labels = tf.cast(labels, tf.float32)
        return base.check_label_range(labels, n_classes=2)

    def _unweighted_loss_and_weights(self, logits, labels, features):
        if self._loss_fn:
            unweighted = base.call_loss_fn(self._loss_fn, labels, logits, features, expected_loss_dim=1)
        else:
            unweighted = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        weights = base.get_weights_and_check_match_logits(features, self._weight_column, logits)
        return unweighted, weights

    def predictions(self, logits, keys=None):
        valid = [_P.LOGITS, _P.LOGISTIC, _P.PROBABILITIES, _P.CLASS_IDS, _P.CLASSES, _P.ALL_CLASS_IDS,
                 _P.ALL_CLASSES]
        if keys:
            base.check_prediction_keys(keys, valid)
        else:
            keys = valid
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.name_scope("predictions"):
            if _P.LOGITS in keys:
                predictions[_P.LOGITS] = logits
            if _P.LOGISTIC in keys:
                predictions[_P.LOGISTIC] = tf.math.sigmoid(logits, name=_P.LOGISTIC)
            two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1, name="two_class_logits")
            if _P.PROBABILITIES in keys:
                predictions[_P.PROBABILITIES] = tf.nn.softmax(two_class_logits, name=_P.PROBABILITIES)
            if _P.CLASS_IDS in keys or _P.CLASSES in keys:
                class_ids = tf.expand_dims(tf.math.argmax(two_class_logits, axis=-1, name=_P.CLASS_IDS), axis=-1)
                if _P.CLASS_IDS in keys:
                    predictions[_P.CLASS_IDS] = class_ids
                if _P.CLASSES in keys:
                    if self._label_vocabulary is not None:
                        predictions[_P.CLASSES] = self._class_string_table().lookup(class_ids)
                    else:
                        predictions[_P.CLASSES] = tf.strings.as_string(class_ids, name="str_classes")
            if _P.ALL_CLASS_IDS in keys:
                predictions[_P.ALL_CLASS_IDS] = base.all_class_ids(logits, n_classes=2)
            if _P.ALL_CLASSES in keys:
                predictions[_P.ALL_CLASSES] = base.all_classes(logits, 2, self._label_vocabulary)
        return predictions

    def metrics(self, regularization_losses=None):
        m = keras().metrics
        with tf.name_scope("metrics"):
            metrics = {
                self._loss_mean_key: m.Mean(name=_K.LOSS_MEAN),
                self._accuracy_key: m.Accuracy(name=_K.ACCURACY),
                self._precision_key: m.Precision(name=_K.PRECISION),
                self._recall_key: m.Recall(name=_K.RECALL),
                self._prediction_mean_key: m.Mean(name=_K.PREDICTION_MEAN),
                self._label_mean_key: m.Mean(name=_K.LABEL_MEAN),
                self._accuracy_baseline_key: m.Mean(name=_K.ACCURACY_BASELINE),
                self._auc_key: m.AUC(name=_K.AUC),
                self._auc_pr_key: m.AUC(curve="PR", name=_K.AUC_PR),
            }
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=_K.LOSS_REGULARIZATION)
            for i, threshold in enumerate(self._thresholds):
                metrics[self._accuracy_keys[i]] = m.BinaryAccuracy(name=self._accuracy_keys[i], threshold=threshold)
                metrics[self._precision_keys[i]] = m.Precision(name=self._precision_keys[i], thresholds=threshold)
                metrics[self._recall_keys[i]] = m.Recall(name=self._recall_keys[i], thresholds=threshold)
        return metrics

    def _update_accuracy_baseline(self, eval_metrics):
        """accuracy_baseline = max(label mean, 1 - label mean), read from the label/mean metric's totals."""
        label_mean = eval_metrics[self._label_mean_key]
        baseline = eval_metrics[self._accuracy_baseline_key]
        baseline.add_update(tf.no_op())
        baseline.total = tf.math.maximum(label_mean.total, label_mean.count - label_mean.total)
        baseline.count = label_mean.count

    @staticmethod
    def _update_auc(auc_metric, labels, predictions, weights=None):
        predictions = tf.cast(predictions, tf.float32)
        if weights is not None:
            weights = base.broadcast_weights(weights, predictions)
        auc_metric.update_state(y_true=labels, y_pred=predictions, sample_weight=weights)

    def update_metrics(self, eval_metrics, features, logits, labels, regularization_losses=None):
        class_ids = self.predictions(logits)[_P.CLASS_IDS]
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        labels = self._processed_labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
        eval_metrics[self._loss_mean_key].update_state(values=unweighted, sample_weight=weights)
        for key in (self._accuracy_key, self._precision_key, self._recall_key):
            eval_metrics[key].update_state(y_true=labels, y_pred=class_ids, sample_weight=weights)
        logistic = self.predictions(logits, [_P.LOGISTIC])[_P.LOGISTIC]
        base.update_metric_with_broadcast_weights(eval_metrics[self._prediction_mean_key], logistic, weights)
        base.update_metric_with_broadcast_weights(eval_metrics[self._label_mean_key], labels, weights)
        self._update_accuracy_baseline(eval_metrics)
        self._update_auc(eval_metrics[self._auc_key], labels, logistic, weights)
        self._update_auc(eval_metrics[self._auc_pr_key], labels, logistic, weights)
        if regularization_losses is not None:
            eval_metrics[self._loss_regularization_key].update_state(values=tf.math.add_n(regularization_losses))
        for i in range(len(self._thresholds)):
            for keys in (self._accuracy_keys, self._precision_keys, self._recall_keys):
                eval_metrics[keys[i]].update_state(y_true=labels, y_pred=logistic, sample_weight=weights)
        return eval_metrics

    def _export_outputs(self, predictions):
        classifier = base.classification_output(predictions[_P.PROBABILITIES], 2, self._label_vocabulary)
        return {DEFAULT_SERVING_KEY: classifier, CLASSIFY_SERVING_KEY: classifier,
                REGRESS_SERVING_KEY: RegressionOutput(value=predictions[_P.LOGISTIC]),
                PREDICT_SERVING_KEY: PredictOutput(predictions)}


class MultiClassHead(_Vocabulary, base.WeightedLoss, Head):
    """Single-label classification over `n_classes` > 2 with a softmax cross-entropy loss; labels are
    class ids (integers) or, with `label_vocabulary`, strings. Metrics: accuracy, average_loss."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None, loss_reduction=SUM_OVER_BATCH_SIZE,
                 loss_fn=None, name=None):
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        _check_vocabulary(label_vocabulary)
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(f'"label_vocabulary" does not have "n_classes" items. len(label_vocabulary)='
                             f'{len(label_vocabulary)}, n_classes={n_classes}, label_vocabulary={label_vocabulary}')
        base.validate_loss_reduction(loss_reduction)
        if loss_fn:
            base.validate_loss_fn_args(loss_fn)
        self._n_classes = base.validate_n_classes(n_classes)
        self._weight_column = weight_column
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name
        self._loss_mean_key = self._summary_key(_K.LOSS_MEAN)
        self._accuracy_key = self._summary_key(_K.ACCURACY)
        self._loss_regularization_key = self._summary_key(_K.LOSS_REGULARIZATION)

    @property
    def name(self):
        return self._name

    @property
    def logits_dimension(self):
        return self._n_classes

    @property
    def loss_reduction(self):
        return self._loss_reduction

    def _processed_labels(self, logits, labels):
        labels = base.check_dense_labels_match_logits_and_reshape(labels, logits, 1)
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
            label_ids = labels
        else:
            if labels.dtype != tf.string:
                raise ValueError(f"Labels dtype should be string if there is a vocabulary. Instead got {labels.dtype}")
            label_ids = self._class_id_table().lookup(labels)
        return base.check_label_range(label_ids, self._n_classes)

    def _unweighted_loss_and_weights(self, logits, label_ids, features):
        if self._loss_fn:
            unweighted = base.call_loss_fn(self._loss_fn, label_ids, logits, features, expected_loss_dim=1)
        else:
            unweighted = _v1.losses.sparse_softmax_cross_entropy(labels=label_ids, logits=logits,
                                                                 reduction=_v1.losses.Reduction.NONE)
            unweighted = tf.expand_dims(unweighted, axis=-1)
        weights = base.get_weights_and_check_match_logits(features, self._weight_column, logits)
        return unweighted, weights

    def predictions(self, logits, keys=None):
        valid = [_P.LOGITS, _P.PROBABILITIES, _P.CLASS_IDS, _P.CLASSES, _P.ALL_CLASS_IDS, _P.ALL_CLASSES]
        if keys:
            base.check_prediction_keys(keys, valid)
        else:
            keys = valid
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.name_scope("predictions"):
            if _P.LOGITS in keys:
                predictions[_P.LOGITS] = logits
            if _P.PROBABILITIES in keys:
                predictions[_P.PROBABILITIES] = tf.nn.softmax(logits, name=_P.PROBABILITIES)
            if _P.CLASS_IDS in keys or _P.CLASSES in keys:
                class_ids = tf.expand_dims(tf.math.argmax(logits, axis=-1, name=_P.CLASS_IDS), axis=-1)
                if _P.CLASS_IDS in keys:
                    predictions[_P.CLASS_IDS] = class_ids
                if _P.CLASSES in keys:
                    if self._label_vocabulary:
                        predictions[_P.CLASSES] = self._class_string_table().lookup(class_ids)
                    else:
                        predictions[_P.CLASSES] = tf.strings.as_string(class_ids, name="str_classes")
            if _P.ALL_CLASS_IDS in keys:
                predictions[_P.ALL_CLASS_IDS] = base.all_class_ids(logits, self._n_classes)
            if _P.ALL_CLASSES in keys:
                predictions[_P.ALL_CLASSES] = base.all_classes(logits, self._n_classes, self._label_vocabulary)
        return predictions

    def metrics(self, regularization_losses=None):
        m = keras().metrics
        with tf.name_scope("metrics"):
            metrics = {self._loss_mean_key: m.Mean(name=_K.LOSS_MEAN)}
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=_K.LOSS_REGULARIZATION)
            metrics[self._accuracy_key] = m.Accuracy(name=_K.ACCURACY)
        return metrics

    def update_metrics(self, eval_metrics, features, logits, labels, regularization_losses=None):
        class_ids = self.predictions(logits)[_P.CLASS_IDS]
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        label_ids = self._processed_labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, label_ids, features)
        eval_metrics[self._loss_mean_key].update_state(values=unweighted, sample_weight=weights)
        eval_metrics[self._accuracy_key].update_state(y_true=label_ids, y_pred=class_ids, sample_weight=weights)
        if regularization_losses is not None:
            eval_metrics[self._loss_regularization_key].update_state(values=tf.math.add_n(regularization_losses))
        return eval_metrics

    def _export_outputs(self, predictions):
        classifier = base.classification_output(predictions[_P.PROBABILITIES], self._n_classes,
                                                self._label_vocabulary)
        return {DEFAULT_SERVING_KEY: classifier, CLASSIFY_SERVING_KEY: classifier,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}


class MultiLabelHead(_Vocabulary, base.WeightedLoss, Head):
    """Multi-label classification: `n_classes` independent sigmoid cross-entropies (averaged per example).
    Labels: an integer multi-hot tensor [batch, n_classes], or a SparseTensor of class ids (strings with
    `label_vocabulary`). Metrics: auc, auc_precision_recall, average_loss, per-threshold and per-class ones."""

    def __init__(self, n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=SUM_OVER_BATCH_SIZE, loss_fn=None, classes_for_class_based_metrics=None, name=None):
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for multi-label classification. Given: {n_classes}")
        thresholds = _check_thresholds(thresholds, "thresholds must be in (0, 1) range. Given: {threshold}")
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)):
                raise ValueError(f"label_vocabulary must be a list or tuple. Given type: {type(label_vocabulary)}")
            if len(label_vocabulary) != n_classes:
                raise ValueError(f"Length of label_vocabulary must be n_classes ({n_classes}). Given: "
                                 f"{len(label_vocabulary)}")
        if loss_fn:
            base.validate_loss_fn_args(loss_fn)
        base.validate_loss_reduction(loss_reduction)
        if classes_for_class_based_metrics:
            classes = tuple(classes_for_class_based_metrics)
            if isinstance(classes[0], str):
                if not label_vocabulary:
                    raise ValueError("label_vocabulary must be provided when classes_for_class_based_metrics are "
                                     "strings.")
                classes = tuple(label_vocabulary.index(c) for c in classes)
            else:
                for class_id in classes:
                    if class_id < 0 or class_id >= n_classes:
                        raise ValueError(f"All classes_for_class_based_metrics must be in range [0, {n_classes - 1}]. "
                                         f"Given: {class_id}")
        else:
            classes = tuple()
        self._n_classes = n_classes
        self._weight_column = weight_column
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._classes_for_class_based_metrics = classes
        self._name = name
        key = self._summary_key
        self._loss_mean_key = key(_K.LOSS_MEAN)
        self._auc_key = key(_K.AUC)
        self._auc_pr_key = key(_K.AUC_PR)
        self._loss_regularization_key = key(_K.LOSS_REGULARIZATION)
        self._accuracy_keys = tuple(key(_K.ACCURACY_AT_THRESHOLD % t) for t in thresholds)
        self._precision_keys = tuple(key(_K.PRECISION_AT_THRESHOLD % t) for t in thresholds)
        self._recall_keys = tuple(key(_K.RECALL_AT_THRESHOLD % t) for t in thresholds)
        if label_vocabulary is None:
            names = [(_K.PROBABILITY_MEAN_AT_CLASS % c, _K.AUC_AT_CLASS % c, _K.AUC_PR_AT_CLASS % c) for c in classes]
        else:
            names = [(_K.PROBABILITY_MEAN_AT_NAME % label_vocabulary[c], _K.AUC_AT_NAME % label_vocabulary[c],
                      _K.AUC_PR_AT_NAME % label_vocabulary[c]) for c in classes]
        self._prob_keys = tuple(key(n[0]) for n in names)
        self._auc_keys = tuple(key(n[1]) for n in names)
        self._auc_pr_keys = tuple(key(n[2]) for n in names)

    @property
    def name(self):
        return self._name

    @property
    def logits_dimension(self):
        return self._n_classes

    @property
    def loss_reduction(self):
        return self._loss_reduction

    def _processed_labels(self, logits, labels):
        if labels is None:
            raise ValueError(base._LABEL_NONE_ERR_MSG)
        if isinstance(labels, tf.sparse.SparseTensor):
            if labels.dtype == tf.string:
                ids = tf.sparse.SparseTensor(labels.indices, self._class_id_table().lookup(labels.values),
                                             labels.dense_shape)
                processed = tf.sparse.to_indicator(ids, self._n_classes)
            else:
                if not labels.values.dtype.is_integer:
                    raise ValueError(f"Labels dtype should be integer. Instead got {labels.values.dtype}.")
                checked = base.check_label_range(
                    labels.values, self._n_classes,
                    message=f"labels must be an integer SparseTensor with values in [0, {self._n_classes})")
                with tf.control_dependencies([checked]):
                    processed = tf.sparse.to_indicator(labels, self._n_classes)
            processed = tf.cast(processed, tf.int64)
        else:
            processed = base.check_label_range(
                tf.convert_to_tensor(labels), 2, message="labels must be an integer indicator Tensor with values in "
                                                         "[0, 1]")
        return base.check_dense_labels_match_logits_and_reshape(processed, logits, self.logits_dimension)

    def _unweighted_loss_and_weights(self, logits, processed_labels, features):
        if self._loss_fn:
            unweighted = base.call_loss_fn(self._loss_fn, processed_labels, logits, features, expected_loss_dim=1)
        else:
            unweighted = _v1.losses.sigmoid_cross_entropy(multi_class_labels=processed_labels, logits=logits,
                                                          reduction=_v1.losses.Reduction.NONE)
            unweighted = tf.math.reduce_mean(unweighted, axis=-1, keepdims=True)
        weights = base.get_weights_and_check_match_logits(features, self._weight_column, logits)
        return unweighted, weights

    def predictions(self, logits, keys=None):
        valid = [_P.LOGITS, _P.PROBABILITIES, _P.CLASSES]
        if keys:
            base.check_prediction_keys(keys, valid)
        else:
            keys = valid
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.name_scope("predictions"):
            if _P.LOGITS in keys:
                predictions[_P.LOGITS] = logits
            if _P.PROBABILITIES in keys:
                predictions[_P.PROBABILITIES] = tf.math.sigmoid(logits, name=_P.PROBABILITIES)
            if _P.CLASSES in keys:
                predictions[_P.CLASSES] = base.all_classes(logits, self._n_classes, self._label_vocabulary)
        return predictions

    def metrics(self, regularization_losses=None):
        m = keras().metrics
        with tf.name_scope("metrics"):
            metrics = {self._loss_mean_key: m.Mean(name=_K.LOSS_MEAN), self._auc_key: m.AUC(name=_K.AUC),
                       self._auc_pr_key: m.AUC(curve="PR", name=_K.AUC_PR)}
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=_K.LOSS_REGULARIZATION)
            for i, threshold in enumerate(self._thresholds):
                metrics[self._accuracy_keys[i]] = m.BinaryAccuracy(name=self._accuracy_keys[i], threshold=threshold)
                metrics[self._precision_keys[i]] = m.Precision(name=self._precision_keys[i], thresholds=threshold)
                metrics[self._recall_keys[i]] = m.Recall(name=self._recall_keys[i], thresholds=threshold)
            for i in range(len(self._classes_for_class_based_metrics)):
                metrics[self._prob_keys[i]] = m.Mean(name=self._prob_keys[i])
                metrics[self._auc_keys[i]] = m.AUC(name=self._auc_keys[i])
                metrics[self._auc_pr_keys[i]] = m.AUC(curve="PR", name=self._auc_pr_keys[i])
        return metrics

    def update_metrics(self, eval_metrics, features, logits, labels, regularization_losses=None):
        logits = base.check_logits_final_dim(logits, self.logits_dimension)
        processed = self._processed_labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, processed, features)
        probabilities = self.predictions(logits, [_P.PROBABILITIES])[_P.PROBABILITIES]
        eval_metrics[self._loss_mean_key].update_state(values=unweighted, sample_weight=weights)
        for key in (self._auc_key, self._auc_pr_key):
            eval_metrics[key].update_state(y_true=processed, y_pred=probabilities, sample_weight=weights)
        if regularization_losses is not None:
            eval_metrics[self._loss_regularization_key].update_state(values=tf.math.add_n(regularization_losses))
        for i in range(len(self._thresholds)):
            for keys in (self._accuracy_keys, self._precision_keys, self._recall_keys):
                eval_metrics[keys[i]].update_state(y_true=processed, y_pred=probabilities, sample_weight=weights)
        for i, class_id in enumerate(self._classes_for_class_based_metrics):
            class_probabilities = probabilities[..., class_id:class_id + 1]
            class_labels = processed[..., class_id:class_id + 1]
            base.update_metric_with_broadcast_weights(eval_metrics[self._prob_keys[i]], class_probabilities, weights)
            eval_metrics[self._auc_keys[i]].update_state(y_true=class_labels, y_pred=class_probabilities,
                                                         sample_weight=weights)
            eval_metrics[self._auc_pr_keys[i]].update_state(y_true=class_labels, y_pred=class_probabilities,
                                                            sample_weight=weights)
        return eval_metrics

    def _export_outputs(self, predictions):
        classifier = base.classification_output(predictions[_P.PROBABILITIES], self._n_classes,
                                                self._label_vocabulary)
        return {DEFAULT_SERVING_KEY: classifier, CLASSIFY_SERVING_KEY: classifier,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}
