"""graph.pbtxt in model_dir after training, as tf.estimator wrote it (TensorBoard and tools read it)."""
import os

import tensorflow as tf
from google.protobuf import text_format

from estimator_helpers import input_fn_for, make_data, model_fn
from npurun.estimator import NPUEstimator

X, Y = make_data()


def test_training_writes_the_training_graph_as_text(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=2))
    est.train(input_fn_for(X, Y), max_steps=2)
    path = os.path.join(model_dir, "graph.pbtxt")
    graph_def = text_format.Parse(open(path, encoding="utf-8").read(), tf.compat.v1.GraphDef())
    names = {node.name for node in graph_def.node}
    assert "global_step" in names
    saved = {name for name, _ in tf.train.list_variables(model_dir) if ":" not in name}  # not the input's state
    assert {"linear/w", "linear/b"} <= saved <= names  # the checkpoint's variables are nodes of the written graph


def test_no_graph_pbtxt_when_nothing_is_saved(make_config, model_dir):
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(save_checkpoints_steps=0))
    est.train(input_fn_for(X, Y), max_steps=2)
    assert not os.path.exists(os.path.join(model_dir, "graph.pbtxt"))

