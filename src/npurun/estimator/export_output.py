"""Export outputs: what one serving signature returns (tf.estimator.export's ExportOutput classes).

A model_fn names them in `EstimatorSpec(export_outputs={signature name: output})`. Rules, as in
tf.estimator:
  - `PredictOutput(outputs)`: a tensor (served as `output`) or a dict of string -> tensor; any
    receiver tensors.
  - `ClassificationOutput(scores=None, classes=None)`: float `scores` and/or string `classes`;
    `RegressionOutput(value)`: a float `value`. Both are the Classify/Regress APIs of TensorFlow
    Serving, which take a single string tensor of serialized `tf.train.Example`s as input.
  - A PREDICT spec without export_outputs serves its predictions as `serving_default`; a single
    output under another name is also served as `serving_default`; several outputs need one
    named `serving_default`.
"""
from __future__ import annotations

import tensorflow as tf

_v1 = tf.compat.v1
DEFAULT_SIGNATURE = "serving_default"
SINGLE_OUTPUT_KEY = "output"


def _quiet_tensor_info():
    """TensorFlow's signature builders call build_tensor_info, deprecated with no TF2 successor (the
    SignatureDef is a TF1 SavedModel structure): its once-per-process deprecation warning is about
    npurun's call, not the user's code, so it is silenced here."""
    from tensorflow.python.util import deprecation

    return deprecation.silence()


def _is_tensor(value) -> bool:
    return isinstance(value, (tf.Tensor, tf.SparseTensor)) or tf.is_tensor(value)


class ExportOutput:
    """Base of the export outputs: `as_signature_def(receiver_tensors)` builds the SignatureDef."""

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError


def _single_string_input(receiver_tensors, what):
    if len(receiver_tensors) != 1:
        raise ValueError(f"{what} signatures can only accept a single tensor input of type tf.string (serialized "
                         f"tf.train.Example); the serving_input_receiver_fn gives {sorted(receiver_tensors)}. Parse "
                         f"the string with tf.io.parse_example when the model needs several inputs")
    (examples,) = receiver_tensors.values()
    if examples.dtype != tf.string:
        raise ValueError(f"{what} signatures can only accept a single tensor input of type tf.string; got "
                         f"{examples.dtype.name}")
    return examples


class ClassificationOutput(ExportOutput):
    """A classification head: `scores` (float) and/or `classes` (string), batch first."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (_is_tensor(scores) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (_is_tensor(classes) and classes.dtype == tf.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("Cannot create a ClassificationOutput with empty arguments: give scores and/or classes")
        self._scores, self._classes = scores, classes

    @property
    def scores(self):
        return self._scores

    @property
    def classes(self):
        return self._classes

    @property
    def outputs(self):
        return {key: value for key, value in (("scores", self._scores), ("classes", self._classes))
                if value is not None}

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Classification")
        with _quiet_tensor_info():
            return _v1.saved_model.classification_signature_def(examples, self._classes, self._scores)


class RegressionOutput(ExportOutput):
    """A regression head: one float `value` tensor, batch first."""

    def __init__(self, value):
        if not (_is_tensor(value) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    @property
    def value(self):
        return self._value

    @property
    def outputs(self):
        return {"value": self._value}

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Regression")
        with _quiet_tensor_info():
            return _v1.saved_model.regression_signature_def(examples, self._value)


class PredictOutput(ExportOutput):
    """Serve a tensor (named `output`) or a dict of string -> tensor as a predict signature."""

    def __init__(self, outputs):
        outputs = dict(outputs) if isinstance(outputs, dict) else {SINGLE_OUTPUT_KEY: outputs}
        for key, value in outputs.items():
            if not isinstance(key, str):
                raise ValueError(f"Prediction output key must be a string; got {key!r}")
            if not _is_tensor(value):
                raise ValueError(f"Prediction output value must be a Tensor; got {value!r} for key {key!r}")
        self._outputs = outputs

    @property
    def outputs(self):
        return self._outputs

    def as_signature_def(self, receiver_tensors):
        with _quiet_tensor_info():
            return _v1.saved_model.predict_signature_def(receiver_tensors, self._outputs)


def _export_output_bases():
    """npurun's ExportOutput and TensorFlow's own (`tensorflow.python.saved_model.model_utils.export_output`,
    which tf.estimator 2.15's `tf.estimator.export.*Output` were and code still imports): both build a
    signature with `as_signature_def(receiver_tensors)`."""
    from tensorflow.python.saved_model.model_utils import export_output as tf_export_output

    return ExportOutput, tf_export_output.ExportOutput


def with_default(export_outputs, predictions):
    """export_outputs of a PREDICT spec, with tf.estimator's default `serving_default` entry."""
    if export_outputs is None:
        return {DEFAULT_SIGNATURE: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, given: {export_outputs}")
    outputs = dict(export_outputs)
    for value in outputs.values():
        if not isinstance(value, _export_output_bases()):
            raise TypeError(f"Values in `export_outputs` must be ExportOutput objects (ClassificationOutput, "
                            f"RegressionOutput, PredictOutput). Given: {outputs}")
    if len(outputs) == 1 and DEFAULT_SIGNATURE not in outputs:
        outputs[DEFAULT_SIGNATURE] = next(iter(outputs.values()))
    if len(outputs) > 1 and DEFAULT_SIGNATURE not in outputs:
        raise ValueError(f"Multiple export_outputs were provided ({sorted(outputs)}), but none of them is specified "
                         f"as the default. Do this by naming one of them '{DEFAULT_SIGNATURE}'")
    return outputs
