"""Warm-starting: initialising variables of a new model from another model's checkpoint.

`warm_start_from` is a checkpoint prefix or directory, a SavedModel directory, or a
`WarmStartSettings` (tf.estimator's):
  - `ckpt_to_initialize_from`: a checkpoint prefix or directory, or a SavedModel directory;
  - `vars_to_warm_start`: a regular expression over the trainable variables (default `.*`: all
    of them), or a list of variable names / regular expressions over all global variables,
    or None (nothing is warm-started);
  - `var_name_to_prev_var_name`: {name in this model: name in the checkpoint} for renamed variables.
A variable is taken when the checkpoint has it with the same shape. This happens only when
model_dir has no checkpoint yet (a restart restores its own checkpoint instead), in training and,
as in tf.estimator, in evaluate/predict (export then restores the warm-start checkpoint); the
global step is never warm-started. `var_name_to_vocab_info` (vocabulary remapping) is not supported.
"""
from __future__ import annotations

import collections
import logging
import os
import re

import tensorflow as tf

from . import checkpoints

logger = logging.getLogger("npurun")
_v1 = tf.compat.v1


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info", "var_name_to_prev_var_name"])):
    """tf.estimator.WarmStartSettings (see the module doc)."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
                var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        if var_name_to_vocab_info:
            raise ValueError("WarmStartSettings: var_name_to_vocab_info (vocabulary remapping) is not supported by "
                             "npurun; warm-start those variables yourself (Scaffold init_fn)")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start, var_name_to_vocab_info or {},
                               var_name_to_prev_var_name or {})


def _candidates(selection):
    """The variables `vars_to_warm_start` selects."""
    if selection is None:
        return []
    if isinstance(selection, str):
        return [v for v in _v1.trainable_variables() if re.match(selection, v.op.name)]
    patterns = list(selection)
    if not all(isinstance(p, str) for p in patterns):
        raise ValueError(f"vars_to_warm_start must be a string, a list of strings or None; got {selection!r}")
    return [v for v in _v1.global_variables() if any(re.match(p, v.op.name) for p in patterns)]


def checkpoint_of(path):
    """The checkpoint prefix `path` names: a prefix, a model directory (its newest checkpoint) or, as in
    tf.estimator, a SavedModel directory (its variables); None when there is none. Paths may be bytes
    (what tf.estimator's export_saved_model returns)."""
    path = os.fsdecode(path)
    if any(os.path.exists(os.path.join(path, name)) for name in ("saved_model.pb", "saved_model.pbtxt")):
        path = os.path.join(path, "variables", "variables")
    return checkpoints.resolve(path)


def source_checkpoint(source):
    """The checkpoint prefix a `warm_start_from` value (path or WarmStartSettings) initialises from."""
    return checkpoint_of(getattr(source, "ckpt_to_initialize_from", source))


def apply(source) -> None:
    """Initialise the selected variables from the checkpoint (before the initialisers are grouped)."""
    path, selection, renamed = source, ".*", {}
    if hasattr(source, "ckpt_to_initialize_from"):
        path = source.ckpt_to_initialize_from
        selection = getattr(source, "vars_to_warm_start", ".*")
        renamed = dict(getattr(source, "var_name_to_prev_var_name", None) or {})
    prefix = checkpoint_of(path)
    if prefix is None:
        raise ValueError(f"warm_start_from: no readable checkpoint at {path!r}")
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    assignment = {}
    for variable in _candidates(selection):
        name = variable.op.name
        if name == "global_step":
            continue
        source_name = renamed.get(name, name)
        if source_name in shapes and list(shapes[source_name]) == variable.shape.as_list():
            assignment[source_name] = variable
    if assignment:
        _v1.train.init_from_checkpoint(prefix, assignment)
    logger.info("Warm-starting %d variable(s) from %s", len(assignment), prefix)
