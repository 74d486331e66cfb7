"""`tf.estimator.MultiHead`: several named heads on one model (multi-objective learning), tf.estimator 2.15's
semantics: the logits are split among the heads (or given per head as a dict), the losses are summed
(weighted by `head_weights`), predictions are keyed `(head name, key)`, metrics and export signatures are
each head's under its name."""
from __future__ import annotations

import tensorflow as tf

from . import base
from .base import DEFAULT_SERVING_KEY, PREDICT_SERVING_KEY, EstimatorSpec, Head, ModeKeys, PredictOutput, keras
from .keys import MetricKeys as _K


def _no_op_train_fn(loss):
    del loss
    return tf.no_op()


def _default_export_output(export_outputs, head_name):
    if len(export_outputs) == 1:
        return next(iter(export_outputs.values()))
    try:
        return export_outputs[DEFAULT_SERVING_KEY]
    except KeyError:
        raise ValueError(f"{head_name} did not specify default export_outputs. Given: {export_outputs} Suggested fix: "
                         f"Use one of the heads in tf.estimator, or include key {DEFAULT_SERVING_KEY} in "
                         f"export_outputs.") from None


class MultiHead(Head):
    """Combines named heads; `labels` is a dict head name -> labels."""

    def __init__(self, heads, head_weights=None):
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}")
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(f"heads and head_weights must have the same size. Given len(heads): {len(heads)}. Given "
                             f"len(head_weights): {len(head_weights)}.")
        for head in heads:
            if head.name is None:
                raise ValueError(f"All given heads must have name specified. Given: {head}")
        self._logits_dimension = sum(head.logits_dimension for head in heads)
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights else tuple()
        self._loss_regularization_key = self._summary_key(_K.LOSS_REGULARIZATION)
        self._loss_keys = tuple(f"{_K.LOSS}/{head.name}" for head in self._heads)

    @property
    def name(self):
        return "_".join(head.name for head in self._heads)

    @property
    def logits_dimension(self):
        return self._logits_dimension

    @property
    def loss_reduction(self):
        reductions = [head.loss_reduction for head in self._heads]
        if len(set(reductions)) > 1:
            raise ValueError(f"The loss_reduction must be the same for different heads. Given: {reductions}")
        return reductions[0]

    def _split_logits(self, logits):
        with tf.name_scope("split_logits"):
            logits = tf.convert_to_tensor(logits)
            dimensions = [head.logits_dimension for head in self._heads]
            last = logits.shape.as_list()[-1] if logits.shape.ndims else None
            if last is not None and last != sum(dimensions):
                raise ValueError(f"Could not split logits of shape {logits.shape.as_list()!r} among the heads with "
                                 f"individual logits dimensions: {dimensions!r}. The last dimension of the logits "
                                 f"tensor should equal {sum(dimensions)} but is {last}.")
            parts = tf.split(logits, dimensions, axis=-1)
            return {head.name: part for head, part in zip(self._heads, parts)}

    def _check_logits_and_labels(self, logits, labels=None):
        names = [head.name for head in self._heads]
        if isinstance(logits, dict):
            missing = sorted(set(names) - set(logits))
            if missing:
                raise ValueError(f"logits has missing values for head(s): {missing}")
            logits_dict = logits
        else:
            logits_dict = self._split_logits(logits)
        if labels is not None:
            if not isinstance(labels, dict):
                raise ValueError(f"labels must be a dict. Given: {labels}")
            missing = sorted(set(names) - set(labels))
            if missing:
                raise ValueError(f"labels has missing values for head(s): {missing}")
        return logits_dict

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        logits_dict = self._check_logits_and_labels(logits, labels)
        losses = [head.loss(logits=logits_dict[head.name], labels=labels[head.name], features=features, mode=mode)
                  for head in self._heads]
        with tf.name_scope("merge_losses"):
            if self._head_weights:
                losses = [tf.math.multiply(loss, weight) for loss, weight in zip(losses, self._head_weights)]
            return base.regularized(tf.math.add_n(losses), regularization_losses)

    def predictions(self, logits, keys=None):
        logits_dict = self._check_logits_and_labels(logits)
        predictions = {}
        with tf.name_scope("merge_pred"):
            for head in self._heads:
                for key, value in head.predictions(logits=logits_dict[head.name]).items():
                    predictions[(head.name, key)] = value
        return predictions

    def metrics(self, regularization_losses=None):
        m = keras().metrics
        metrics = {}
        if regularization_losses is not None:
            metrics[self._loss_regularization_key] = m.Mean(name=_K.LOSS_REGULARIZATION)
        with tf.name_scope("merge_eval"):
            for key in self._loss_keys:
                metrics[key] = m.Mean(name=key)
        return metrics

    def update_metrics(self, eval_metrics, features, logits, labels, regularization_losses=None):
        logits_dict = self._check_logits_and_labels(logits, labels)
        if regularization_losses is not None:
            eval_metrics[self._loss_regularization_key].update_state(values=tf.math.add_n(regularization_losses))
        for i, head in enumerate(self._heads):
            head_logits, head_labels = logits_dict[head.name], labels[head.name]
            eval_metrics[self._loss_keys[i]].update_state(
                values=head.loss(logits=head_logits, labels=head_labels, features=features))
            eval_metrics.update(head.update_metrics(head.metrics(), features, head_logits, head_labels) or {})
        return eval_metrics

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None, trainable_variables=None,
                              train_op_fn=None, update_ops=None, regularization_losses=None):
        with tf.name_scope(self.name):
            logits_dict = self._check_logits_and_labels(logits, labels)
            specs = [head.create_estimator_spec(features=features, mode=mode, logits=logits_dict[head.name],
                                                labels=labels[head.name] if labels else None,
                                                train_op_fn=_no_op_train_fn)
                     for head in self._heads]
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=predictions,
                                     export_outputs=self._merge_predict_export_outputs(specs))
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                metrics = self.update_metrics(self.metrics(regularization_losses=regularization_losses), features,
                                              logits, labels, regularization_losses=regularization_losses)
                return EstimatorSpec(mode=ModeKeys.EVAL, predictions=predictions, loss=loss, eval_metric_ops=metrics)
            if mode != ModeKeys.TRAIN:
                raise ValueError(f"mode={mode} unrecognized")
            train_op = base.create_estimator_spec_train_op(
                head_name=self.name, optimizer=optimizer, trainable_variables=trainable_variables,
                train_op_fn=train_op_fn, update_ops=update_ops, regularized_training_loss=loss,
                loss_reduction=self.loss_reduction)
            base.create_estimator_spec_summary(loss, regularization_losses)
            return EstimatorSpec(mode=ModeKeys.TRAIN, loss=loss, train_op=train_op, predictions=predictions)

    def _merge_predict_export_outputs(self, specs):
        outputs = {DEFAULT_SERVING_KEY: _default_export_output(specs[0].export_outputs, self._heads[0].name)}
        merged = {}
        for head, spec in zip(self._heads, specs):
            for key, value in spec.export_outputs.items():
                outputs[head.name if key == DEFAULT_SERVING_KEY else f"{head.name}/{key}"] = value
                if key == PREDICT_SERVING_KEY and isinstance(value, PredictOutput):
                    for name, tensor in value.outputs.items():
                        merged[f"{head.name}/{name}"] = tensor
        outputs[PREDICT_SERVING_KEY] = PredictOutput(merged)
        return outputs
