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
from .export_output import (DEFAULT_SIGNATURE, ClassificationOutput, ExportOutput, PredictOutput,  # noqa: F401
                            RegressionOutput, with_default)
from .spec import ModeKeys

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1
SINGLE_RECEIVER_KEY = "input"


SINGLE_FEATURE_KEY = "feature"
SINGLE_LABEL_KEY = "label"


def _as_dict(tensors, default_key):
    return dict(tensors) if isinstance(tensors, dict) else {default_key: tensors}


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """What a serving_input_receiver_fn returns.

    `features`: a dict of tensors passed to model_fn (a single tensor becomes `{'feature': t}`, as
    in tf.estimator; use TensorServingInputReceiver to pass it bare); `receiver_tensors`: a tensor
    or dict of tensors (usually placeholders) fed by the server, named `input` when a single
    tensor; `receiver_tensors_alternatives`: optional {name: tensor or dict} giving extra signatures.
    """

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("ServingInputReceiver: features must be defined")
        features = _checked_tensors("ServingInputReceiver", _as_dict(features, SINGLE_FEATURE_KEY), "feature",
                                    allow_int_keys=True)
        return super().__new__(cls, features, *_receivers(
            "ServingInputReceiver", receiver_tensors, receiver_tensors_alternatives))


def _labeled_tensor(value) -> bool:
    """A wrapper with a `.tensor` that converts to a Tensor (LabeledTensor): tf.estimator accepts it too."""
    if not hasattr(value, "tensor"):
        return False
    try:
        tf.convert_to_tensor(value)
    except (TypeError, ValueError):
        return False
    return True


def _checked_tensors(what, tensors, label, allow_int_keys=False):
    """`tensors` (a dict) with tf.estimator's checks: string (or int) keys, Tensor/SparseTensor/RaggedTensor values."""
    for name, tensor in tensors.items():
        if not isinstance(name, str) and not (allow_int_keys and isinstance(name, int)):
            allowed = "strings or ints" if allow_int_keys else "strings"
            raise ValueError(f"{what}: {label} keys must be {allowed}: {name!r}")
        if not isinstance(tensor, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)) and not _labeled_tensor(tensor):
            raise ValueError(f"{what}: {label} {name} must be a Tensor, SparseTensor, or RaggedTensor. Got "
                             f"{tensor!r}")
    return tensors


def _receivers(what, receiver_tensors, alternatives):
    if receiver_tensors is None:
        raise ValueError(f"{what}: receiver_tensors must be defined")
    receiver_tensors = _as_dict(receiver_tensors, SINGLE_RECEIVER_KEY)
    if not receiver_tensors:
        raise ValueError(f"{what}: receiver_tensors must not be empty")
    _checked_tensors(what, receiver_tensors, "receiver_tensor")
    if alternatives is not None and not isinstance(alternatives, dict):
        raise ValueError(f"{what}: receiver_tensors_alternatives must be a dict: {alternatives!r}")
    return receiver_tensors, {name: _as_dict(t, SINGLE_RECEIVER_KEY) for name, t in (alternatives or {}).items()}


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """A ServingInputReceiver whose `features` is one tensor, passed to model_fn as it is (not in a dict)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("TensorServingInputReceiver: features must be defined")
        if not tf.is_tensor(features):
            raise ValueError(f"TensorServingInputReceiver: feature must be a Tensor, SparseTensor, or RaggedTensor; "
                             f"got {features!r}")
        return super().__new__(cls, features, *_receivers(
            "TensorServingInputReceiver", receiver_tensors, receiver_tensors_alternatives))


class SupervisedInputReceiver(collections.namedtuple(
        "SupervisedInputReceiver", ["features", "labels", "receiver_tensors"])):
    """Features and labels fed from `receiver_tensors` (for exporting training/evaluation graphs)."""

    def __new__(cls, features, labels, receiver_tensors):
        for given, label in ((features, "feature"), (labels, "label")):
            if given is None:
                raise ValueError(f"SupervisedInputReceiver: {label}s must be defined")
            _checked_tensors("SupervisedInputReceiver", _as_dict(given, label), label, allow_int_keys=True)
        receiver_tensors, _ = _receivers("SupervisedInputReceiver", receiver_tensors, None)
        return super().__new__(cls, features, labels, receiver_tensors)


def _placeholder_shape(value, batch_size):
    """The batch dimension replaced by `batch_size`; an unknown rank stays unknown (None)."""
    shape = tf.TensorShape(value.shape)
    if shape.rank is None:
        return None
    return [batch_size] + shape.as_list()[1:] if shape.rank else []


def _placeholders(values, batch_size, prefix=""):
    return {name: _v1.placeholder(value.dtype, _placeholder_shape(value, batch_size), name=prefix + name)
            for name, value in values.items()}


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn feeding placeholders shaped like `features` (a tensor or dict of tensors, or
    TensorSpecs), with the batch dimension `default_batch_size` (None: any); a feature of unknown
    rank gets a placeholder of unknown rank."""
    single = not isinstance(features, dict)
    specs = _as_dict(features, SINGLE_FEATURE_KEY)

    def receiver_fn():
        placeholders = _placeholders(specs, default_batch_size)
        if single:
            return TensorServingInputReceiver(placeholders[SINGLE_FEATURE_KEY], placeholders)
        return ServingInputReceiver(placeholders, placeholders)

    return receiver_fn


def build_raw_supervised_input_receiver_fn(features, labels, default_batch_size=None):
    """A receiver fn feeding features and labels (tensors or dicts of tensors) through placeholders;
    their names must not collide. Returns SupervisedInputReceiver(features, labels, receiver_tensors)."""
    # A single feature tensor is fed as `input`, a single label as `label` (tf.estimator's receiver names).
    feature_specs, label_specs = _as_dict(features, SINGLE_RECEIVER_KEY), _as_dict(labels, SINGLE_LABEL_KEY)
    clash = set(feature_specs) & set(label_specs)
    if clash:
        raise ValueError(f"build_raw_supervised_input_receiver_fn: features and labels cannot share names; "
                         f"both have {sorted(clash)}")

    def receiver_fn():
        feature_holders = _placeholders(feature_specs, default_batch_size)
        label_holders = _placeholders(label_specs, default_batch_size)
        receiver_tensors = {**feature_holders, **label_holders}
        return SupervisedInputReceiver(
            feature_holders if isinstance(features, dict) else feature_holders[SINGLE_RECEIVER_KEY],
            label_holders if isinstance(labels, dict) else label_holders[SINGLE_LABEL_KEY], receiver_tensors)

    return receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(input_fn, **input_fn_args):
    """A receiver fn whose placeholders match what `input_fn(**input_fn_args)` returns: a
    (features, labels) tuple or a Dataset of them. input_fn runs once here, in a graph of its own, only
    to read dtypes and shapes (see build_raw_supervised_input_receiver_fn)."""
    from .inputs import make_input

    with tf.Graph().as_default():
        made = make_input(input_fn(**input_fn_args))
    return build_raw_supervised_input_receiver_fn(made.features, made.labels)


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn taking serialized tf.train.Example protos (`examples`) parsed with `feature_spec`."""

    def receiver_fn():
        serialized = _v1.placeholder(tf.string, [default_batch_size], name="input_example_tensor")
        features = tf.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return receiver_fn


def signature_defs(spec, receiver) -> dict:
    """The signatures: model_fn's export_outputs (a PREDICT spec always has them) for each receiver.

    As tf.estimator: a signature the receiver cannot feed (a Classify/Regress output without a
    single string input) is left out with a warning; none left is a ValueError.
    """
    outputs = with_default(spec.export_outputs, spec.predictions)
    receivers = [("", receiver.receiver_tensors)] + [(f"{alt}:", tensors) for alt, tensors
                                                      in receiver.receiver_tensors_alternatives.items()]
    signatures, excluded = {}, {}
    for prefix, tensors in receivers:
        for name, out in outputs.items():
            try:
                signatures[prefix + name] = out.as_signature_def(tensors)
            except ValueError as error:
                excluded[prefix + name] = str(error)
    for name, why in excluded.items():
        logger.warning("Signature %r is left out of the export: %s", name, why)
    if not signatures:
        raise ValueError(f"Export includes no signatures! Every export output was left out: {excluded}")
    if DEFAULT_SIGNATURE not in signatures:
        logger.warning("Export includes no default signature (%r)", DEFAULT_SIGNATURE)
    return signatures


def export(estimator, plan, export_dir_base, serving_input_receiver_fn, checkpoint_path, assets_extra=None,
           as_text=False, strip_default_attrs=True, warm_start=None) -> str:
    """Write the SavedModel (see NPUEstimator.export_saved_model); returns the export directory.
    `checkpoint_path` None: the newest checkpoint of the model_dir that restores. Files the graph lists
    as assets (the ASSET_FILEPATHS collection, e.g. vocabularies) are copied into `assets/`. `warm_start` (a
    `warm_start_from` value), instead of a checkpoint: the variables are warm-started, the others initialised."""
    if isinstance(export_dir_base, bytes):  # tf.estimator accepts (and returns) bytes paths
        export_dir_base = export_dir_base.decode("utf-8")
    export_dir_base = os.fspath(export_dir_base)
    holder = {}

    def receive():
        holder["receiver"] = receiver = serving_input_receiver_fn()
        if not isinstance(receiver, (ServingInputReceiver, TensorServingInputReceiver)):
            raise TypeError(f"serving_input_receiver_fn must return a ServingInputReceiver or "
                            f"TensorServingInputReceiver; got {type(receiver).__name__}")
        return receiver.features, None

    with plan.environment():
        built = building.ModeGraph(estimator, ModeKeys.PREDICT, plan, receive)
        with built.graph.as_default():
            signatures = signature_defs(built.spec, holder["receiver"])
            saver = built.saver()
            # As tf.estimator: the scaffold's local_init_op, if any, is what loading the SavedModel runs.
            local_init = getattr(built.spec.scaffold, "local_init_op", None)
            if local_init is None:
                local_init = building.local_init_op(built.graph)
            initialize = None
            if warm_start is not None:
                building.warm_start(warm_start)
                initialize = _v1.global_variables_initializer()
        export_dir, temp_dir = _new_export_dirs(export_dir_base)
        try:
            _write_saved_model(estimator, built, saver, signatures, local_init, plan, temp_dir, checkpoint_path,
                               as_text, strip_default_attrs, initialize)
            for dest_rel, source in (assets_extra or {}).items():
                dest = os.path.join(temp_dir, "assets.extra", dest_rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy(source, dest)
        except BaseException as error:
            # A partial export would keep filling the disk that training's next checkpoint needs.
            shutil.rmtree(temp_dir, ignore_errors=True)
            if isinstance(error, (tf.errors.OpError, OSError, RuntimeError)) and checkpoints.is_disk_full(error):
                raise _disk_full(export_dir_base, estimator.model_dir, error) from error
            raise
    os.rename(temp_dir, export_dir)  # the timestamped directory appears complete or not at all
    logger.info("Exported SavedModel to %s", export_dir)
    return export_dir


def _write_saved_model(estimator, built, saver, signatures, local_init, plan, temp_dir, checkpoint_path, as_text,
                       strip_default_attrs, initialize=None):
    with built.session(plan.target) as sess:
        if initialize is not None:  # the warm-start model (see export)
            sess.run(initialize)
        elif checkpoint_path is None:  # the newest that restores now (a training job may evict)
            if checkpoints.restore_newest([saver], sess, estimator.model_dir) is None:
                raise ValueError(f"export: the checkpoints in {estimator.model_dir} vanished before they "
                                 f"could be read")
        else:
            saver.restore(sess, checkpoint_path)
        sess.run(local_init)
        builder = _v1.saved_model.Builder(temp_dir)
        builder.add_meta_graph_and_variables(
            sess, [_v1.saved_model.tag_constants.SERVING], signature_def_map=signatures,
            assets_collection=built.graph.get_collection(_v1.GraphKeys.ASSET_FILEPATHS) or None,
            main_op=local_init, strip_default_attrs=strip_default_attrs, clear_devices=True, saver=saver)
        builder.save(as_text)


def _disk_full(base, model_dir, error) -> checkpoints.DiskFullError:
    """The export's one-paragraph error: where, about how many bytes (the newest earlier export,
    else the newest checkpoint's files), and how many are free."""
    earlier = sorted((name for name in os.listdir(base) if name.isdigit()), key=int) if os.path.isdir(base) else []
    needed = _tree_bytes(os.path.join(base, earlier[-1])) if earlier else 0
    if not needed:
        newest = checkpoints.latest_checkpoint(model_dir)
        needed = _tree_bytes(newest + ".index") + sum(_tree_bytes(p) for p in checkpoints.data_files(newest)) \
            if newest else 0
    free = shutil.disk_usage(base).free
    return checkpoints.DiskFullError(
        f"Not enough space to export a SavedModel in {base}: about {needed} bytes needed, {free} bytes free "
        f"({checkpoints.first_line(error)}). The partial export was removed; earlier exports and the checkpoints "
        f"are untouched. Free space there or export to another directory")


def _tree_bytes(path) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)


def _new_export_dirs(base):
    """(export dir, temporary dir): the temporary one is created here, exclusively (a name taken by
    anything, a planted link included, is skipped), so the SavedModel is never written through a link."""
    os.makedirs(base, exist_ok=True)
    stamp = int(time.time())
    while True:
        final, temporary = os.path.join(base, str(stamp)), os.path.join(base, f"temp-{stamp}")
        if not os.path.lexists(final):
            try:
                os.mkdir(temporary)
                return final, temporary
            except FileExistsError:
                pass
        stamp += 1  # two exports within one second get distinct timestamps
