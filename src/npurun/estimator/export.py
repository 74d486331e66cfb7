"""Exporting a SavedModel that plain TensorFlow 2 loads and serves.

A `serving_input_receiver_fn` returns a `ServingInputReceiver`: the tensors the served model
receives (`receiver_tensors`, the signature's inputs) and the `features` model_fn gets from them.
The export is a TF1-style SavedModel (tf.compat.v1.saved_model.Builder, tag "serve") whose
`serving_default` signature `tf.saved_model.load(path).signatures["serving_default"]` calls.
"""
from __future__ import annotations

import collections
import logging
import os
import shutil
import time

import tensorflow as tf

from . import building, checkpoints
from .spec import ModeKeys

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1
DEFAULT_SIGNATURE = "serving_default"
SINGLE_RECEIVER_KEY = "input"


def _as_dict(tensors, default_key):
    return dict(tensors) if isinstance(tensors, dict) else {default_key: tensors}


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """What a serving_input_receiver_fn returns.

    `features`: a tensor or dict of tensors passed to model_fn; `receiver_tensors`: a tensor or
    dict of tensors (usually placeholders) fed by the server, named `input` when a single tensor;
    `receiver_tensors_alternatives`: optional {name: tensor or dict} giving extra signatures.
    """

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("ServingInputReceiver: features must be given")
        receiver_tensors = _as_dict(receiver_tensors, SINGLE_RECEIVER_KEY)
        if not receiver_tensors:
            raise ValueError("ServingInputReceiver: receiver_tensors must not be empty")
        alternatives = {name: _as_dict(t, SINGLE_RECEIVER_KEY)
                        for name, t in (receiver_tensors_alternatives or {}).items()}
        return super().__new__(cls, features, receiver_tensors, alternatives)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn feeding placeholders shaped like `features` (a tensor or dict of tensors, or
    TensorSpecs), with the batch dimension `default_batch_size` (None: any)."""
    single = not isinstance(features, dict)
    specs = _as_dict(features, "feature")

    def receiver_fn():
        placeholders = {}
        for name, value in specs.items():
            shape = tf.TensorShape(value.shape)
            shape = [default_batch_size] + shape.as_list()[1:] if shape.rank else []
            placeholders[name] = _v1.placeholder(value.dtype, shape, name=name)
        inputs = placeholders["feature"] if single else placeholders
        return ServingInputReceiver(inputs, placeholders)

    return receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn taking serialized tf.train.Example protos (`examples`) parsed with `feature_spec`."""

    def receiver_fn():
        serialized = _v1.placeholder(tf.string, [default_batch_size], name="input_example_tensor")
        features = tf.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return receiver_fn


class PredictOutput:
    """Serve a tensor or dict of tensors as a predict signature (outputs named `output` if single)."""

    def __init__(self, outputs):
        self.outputs = _as_dict(outputs, "output")

    def as_signature_def(self, receiver_tensors):
        return _v1.saved_model.signature_def_utils.predict_signature_def(receiver_tensors, self.outputs)


def signature_defs(spec, receiver: ServingInputReceiver) -> dict:
    """The signatures: model_fn's export_outputs (or its predictions) for each receiver."""
    outputs = dict(spec.export_outputs or {DEFAULT_SIGNATURE: PredictOutput(spec.predictions)})
    if DEFAULT_SIGNATURE not in outputs:
        if len(outputs) != 1:
            raise ValueError(f"export_outputs has several entries ({sorted(outputs)}) and none is "
                             f"'{DEFAULT_SIGNATURE}'")
        outputs[DEFAULT_SIGNATURE] = next(iter(outputs.values()))
    signatures = {name: out.as_signature_def(receiver.receiver_tensors) for name, out in outputs.items()}
    for alt_name, tensors in receiver.receiver_tensors_alternatives.items():
        for name, out in outputs.items():
            signatures[f"{alt_name}:{name}"] = out.as_signature_def(tensors)
    return signatures


def export(estimator, plan, export_dir_base, serving_input_receiver_fn, checkpoint_path, assets_extra=None,
           as_text=False) -> str:
    """Write the SavedModel (see NPUEstimator.export_saved_model); returns the export directory.
    `checkpoint_path` None: the newest checkpoint of the model_dir that restores."""
    holder = {}

    def receive():
        holder["receiver"] = receiver = serving_input_receiver_fn()
        if not isinstance(receiver, ServingInputReceiver):
            raise TypeError(f"serving_input_receiver_fn must return a ServingInputReceiver; got "
                            f"{type(receiver).__name__}")
        return receiver.features, None

    with plan.environment():
        built = building.ModeGraph(estimator, ModeKeys.PREDICT, plan, receive)
        with built.graph.as_default():
            signatures = signature_defs(built.spec, holder["receiver"])
            saver = built.saver()
            local_init = building.local_init_op(built.graph)
        export_dir, temp_dir = _new_export_dirs(export_dir_base)
        with built.session(plan.target) as sess:
            if checkpoint_path is None:  # the newest that restores now (a training job may evict)
                if checkpoints.restore_newest([saver], sess, estimator.model_dir) is None:
                    raise ValueError(f"export: the checkpoints in {estimator.model_dir} vanished before they "
                                     f"could be read")
            else:
                saver.restore(sess, checkpoint_path)
            sess.run(local_init)
            builder = _v1.saved_model.Builder(temp_dir)
            builder.add_meta_graph_and_variables(
                sess, [_v1.saved_model.tag_constants.SERVING], signature_def_map=signatures,
                main_op=local_init, strip_default_attrs=True, clear_devices=True, saver=saver)
            builder.save(as_text)
    for dest_rel, source in (assets_extra or {}).items():
        dest = os.path.join(temp_dir, "assets.extra", dest_rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy(source, dest)
    os.rename(temp_dir, export_dir)  # the timestamped directory appears complete or not at all
    logger.info("Exported SavedModel to %s", export_dir)
    return export_dir


def _new_export_dirs(base):
    os.makedirs(base, exist_ok=True)
    stamp = int(time.time())
    while os.path.exists(os.path.join(base, str(stamp))) or os.path.exists(os.path.join(base, f"temp-{stamp}")):
        stamp += 1  # two exports within one second get distinct timestamps
    return os.path.join(base, str(stamp)), os.path.join(base, f"temp-{stamp}")
