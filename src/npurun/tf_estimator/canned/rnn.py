"""`tf.estimator.experimental.RNNClassifier` and `RNNEstimator`: tf.estimator 2.15's signatures and defaults
(`units=None`, `cell_type=USE_DEFAULT` ('simple_rnn'), `optimizer='Adagrad'` as the other premade estimators;
`rnn_cell_fn` or `units` + `cell_type` 'simple_rnn' / 'lstm' / 'gru'), built on tf-keras: the sequence
feature columns go through `tf_keras.experimental.SequenceFeatures`, context columns through `DenseFeatures`
(tiled over time and concatenated), then `tf_keras.layers.RNN` over the cells (masked by the sequence lengths)
and a Dense `logits` layer, whose logits go to the head. `return_sequences=True` (a head over every time
step, tf.estimator's sequential head) is refused with an error saying so."""
from __future__ import annotations

import tensorflow as tf

from ...estimator.spec import ModeKeys
from ..head.base import SUM_OVER_BATCH_SIZE
from . import optimizers
from ._common import binary_or_multi_class_head, check_features, estimator_base, feature_column_quiet

_CELL_TYPES = ("simple_rnn", "lstm", "gru")
USE_DEFAULT = "default"  # tf.estimator's cell_type default: 'simple_rnn' unless rnn_cell_fn is given


def _keras():
    import tf_keras

    return tf_keras


def _cell_factory(rnn_cell_fn, units, cell_type):
    if rnn_cell_fn is not None:
        if units is not None or cell_type != USE_DEFAULT:
            raise ValueError("units and cell_type must not be specified when using rnn_cell_fn")
        return rnn_cell_fn
    if not units:
        raise ValueError("units must be given (a list of cell sizes) when rnn_cell_fn is not")
    keras = _keras()
    if cell_type == USE_DEFAULT:
        cell_type = "simple_rnn"
    if callable(cell_type) and not isinstance(cell_type, str):
        cell_class = cell_type
    elif cell_type in _CELL_TYPES:
        cell_class = {"simple_rnn": keras.layers.SimpleRNNCell, "lstm": keras.layers.LSTMCell,
                      "gru": keras.layers.GRUCell}[cell_type]
    else:
        raise ValueError(f"cell_type must be one of {list(_CELL_TYPES)} or a Keras RNN cell class; got {cell_type!r}")

    def make_cells():
        cells = [cell_class(n) for n in units]
        return cells[0] if len(cells) == 1 else keras.layers.StackedRNNCells(cells)
    return make_cells


def _rnn_logits(features, mode, logits_dimension, sequence_feature_columns, context_feature_columns, make_cell):
    keras = _keras()
    training = mode == ModeKeys.TRAIN
    with feature_column_quiet():
        sequence_input, sequence_length = keras.experimental.SequenceFeatures(
            sequence_feature_columns, name="sequence_input_layer")(features, training=training)
        if context_feature_columns:
            context = keras.layers.DenseFeatures(context_feature_columns, name="context_input_layer")(features)
            steps = tf.shape(sequence_input)[1]
            tiled = tf.tile(tf.expand_dims(context, 1), [1, steps, 1])
            sequence_input = tf.concat([sequence_input, tiled], axis=2)
    mask = tf.sequence_mask(sequence_length, maxlen=tf.shape(sequence_input)[1])
    # the lengths' batch size is not static; without the input's, the masked state's shape changes inside Keras's
    # while_loop when the batch size is known (a ValueError naming `rnn/zeros_like`)
    mask.set_shape(sequence_input.shape[:2])
    rnn_layer = keras.layers.RNN(make_cell(), name="rnn")
    outputs = rnn_layer(sequence_input, mask=mask, training=training)
    logits_layer = keras.layers.Dense(logits_dimension, name="logits")
    logits = logits_layer(outputs)
    return logits, rnn_layer.trainable_weights + logits_layer.trainable_weights


def _model_fn(head, sequence_feature_columns, context_feature_columns, make_cell, optimizer):
    def model_fn(features, labels, mode, config):
        del config
        check_features(features)
        logits, variables = _rnn_logits(features, mode, head.logits_dimension, sequence_feature_columns,
                                        context_feature_columns, make_cell)
        train_optimizer = None
        if mode == ModeKeys.TRAIN:
            train_optimizer = optimizers.get_optimizer_instance_v2(optimizer)
            optimizers.drives_global_step(train_optimizer)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=train_optimizer,
                                          logits=logits, trainable_variables=variables)
    return model_fn


def _check(sequence_feature_columns, return_sequences):
    if not sequence_feature_columns:
        raise ValueError("sequence_feature_columns must be given (the sequence feature columns of the input)")
    if return_sequences:
        raise NotImplementedError("RNN estimators with return_sequences=True are not provided by npurun: they need "
                                  "tf.estimator's sequential head (a loss over every time step); use "
                                  "return_sequences=False (the last step's output) or a custom model_fn")


_Estimator = estimator_base()


class RNNEstimator(_Estimator):
    """A recurrent network over sequence features with a user-given head
    (`tf.estimator.experimental.RNNEstimator`)."""

    def __init__(self, head, sequence_feature_columns, context_feature_columns=None, units=None,
                 cell_type=USE_DEFAULT, rnn_cell_fn=None, return_sequences=False, model_dir=None,
                 optimizer="Adagrad", config=None):
        _check(sequence_feature_columns, return_sequences)
        make_cell = _cell_factory(rnn_cell_fn, units, cell_type)
        super().__init__(model_fn=_model_fn(head, list(sequence_feature_columns), list(context_feature_columns or []),
                                            make_cell, optimizer),
                         model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
    """A recurrent-network classifier over sequence features (`tf.estimator.experimental.RNNClassifier`)."""

    def __init__(self, sequence_feature_columns, context_feature_columns=None, units=None, cell_type=USE_DEFAULT,
                 rnn_cell_fn=None, return_sequences=False, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Adagrad", loss_reduction=SUM_OVER_BATCH_SIZE,
                 sequence_mask="sequence_mask", config=None):
        del sequence_mask  # the mask's feature name, used by the sequential head only (return_sequences=True)
        head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, sequence_feature_columns, context_feature_columns, units=units, cell_type=cell_type,
                         rnn_cell_fn=rnn_cell_fn, return_sequences=return_sequences, model_dir=model_dir,
                         optimizer=optimizer, config=config)
