"""tf.estimator conformance: warm starting (from SavedModels, in evaluate/predict/export), restore
errors, export's local_init_op and predict's warning, as TensorFlow 2.15's tf.estimator has them."""
import logging

import numpy as np
import pytest
import tensorflow as tf

v1 = tf.compat.v1


pytestmark = pytest.mark.usefixtures("single_process")


def _estimator(*args, **kwargs):
    from npurun.tf_estimator import Estimator

    return Estimator(*args, **kwargs)


def _spec(**fields):
    from npurun.estimator import EstimatorSpec

    return EstimatorSpec(**fields)


def _input_fn():
    return {"x": tf.constant([[1.0], [1.0]])}, tf.constant([[1.0], [1.0]])


def _make_model_fn(initial):
    """A model whose variable starts at `initial`; it predicts and reports the variable + 1."""
    def model_fn(features, labels, mode):
        weight = v1.get_variable("weight", initializer=np.float32(initial))
        value = weight + 1.0
        if mode == "infer":
            return _spec(mode=mode, predictions=tf.reshape(value, [1]))
        return _spec(mode=mode, loss=tf.constant(0.0), train_op=v1.assign_add(v1.train.get_global_step(), 1),
                     eval_metric_ops={"value": v1.metrics.mean(value)})
    return model_fn


def _receiver():
    from npurun.estimator import export

    x = v1.placeholder(tf.float32, [None, 1], name="x")
    return export.ServingInputReceiver({"x": x}, {"x": x})


def test_warm_start_from_an_exported_saved_model_and_without_a_checkpoint(tmp_path):
    first = _estimator(_make_model_fn(42.0), str(tmp_path / "first"))
    first.train(_input_fn, steps=1)
    exported = first.export_saved_model(str(tmp_path / "export"), _receiver)
    assert isinstance(exported, bytes)  # tf.estimator's type, and warm_start_from takes it

    for source in (exported, str(tmp_path / "first")):
        fresh = _estimator(_make_model_fn(52.0), str(tmp_path / "fresh"), warm_start_from=source)
        # no checkpoint of its own: evaluate and predict start from the warm-start model, as tf.estimator's
        assert fresh.evaluate(_input_fn, steps=1)["value"] == 43.0
        assert next(fresh.predict(_input_fn)) == 43.0
        # export too: it exports the warm-start checkpoint
        served = tf.saved_model.load(fresh.export_saved_model(str(tmp_path / "fresh_export"), _receiver))
        output = served.signatures["serving_default"](x=tf.constant([[0.0]]))
        assert list(output.values())[0].numpy().ravel().tolist() == [43.0]

    trained = _estimator(_make_model_fn(52.0), str(tmp_path / "trained"), warm_start_from=exported)
    trained.train(_input_fn, steps=1)
    assert trained.get_variable_value("weight") == 42.0


def test_a_checkpoint_of_another_shape_is_tf_estimators_restore_error(tmp_path):
    def model_fn(shape):
        def fn(features, labels, mode):
            v1.get_variable("weight", shape, initializer=v1.zeros_initializer())
            return _spec(mode=mode, loss=tf.constant(0.0), train_op=v1.assign_add(v1.train.get_global_step(), 1))
        return fn

    _estimator(model_fn([]), str(tmp_path)).train(_input_fn, steps=1)
    changed = _estimator(model_fn([1]), str(tmp_path))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Restoring from checkpoint failed.*a mismatch between"):
        changed.train(_input_fn, steps=1)
    with pytest.raises(ValueError, match=r"'weight' has shape \[\] in the checkpoint but \[1\]"):
        changed.train(_input_fn, steps=1)


def test_the_exported_saved_model_runs_the_scaffolds_local_init_op(tmp_path):
    def model_fn(features, labels, mode):
        my_int = v1.get_variable("my_int", initializer=1, collections=[v1.GraphKeys.LOCAL_VARIABLES])
        with tf.control_dependencies([v1.local_variables_initializer()]):
            local_init = tf.group(v1.assign(my_int, 12345))
        return _spec(mode=mode, predictions=tf.constant([[1.0]]), loss=tf.constant(0.0),
                     train_op=v1.assign_add(v1.train.get_global_step(), 1),
                     scaffold=v1.train.Scaffold(local_init_op=local_init))

    estimator = _estimator(model_fn, str(tmp_path / "model"))
    estimator.train(_input_fn, steps=1)
    export_dir = estimator.export_saved_model(str(tmp_path / "export"), _receiver)
    with tf.Graph().as_default() as graph, v1.Session(graph=graph) as sess:
        v1.saved_model.load(sess, [v1.saved_model.tag_constants.SERVING], export_dir)
        my_int = [v for v in graph.get_collection(v1.GraphKeys.LOCAL_VARIABLES) if v.op.name == "my_int"][0]
        assert sess.run(my_int.read_value() if hasattr(my_int, "read_value") else my_int) == 12345


def test_predict_warns_when_the_input_never_ends(tmp_path, caplog):
    def model_fn(features, labels, mode):
        return _spec(mode=mode, loss=tf.constant(0.0), train_op=v1.assign_add(v1.train.get_global_step(), 1),
                     predictions=tf.constant([[10.0]]))

    estimator = _estimator(model_fn, str(tmp_path))
    estimator.train(_input_fn, steps=1)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        assert next(estimator.predict(_input_fn)) == [10.0]
    assert "Input graph does not use tf.data.Dataset or contain a QueueRunner" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        next(estimator.predict(lambda: tf.data.Dataset.from_tensors({"x": [[1.0]]})))
        one_shot = v1.data.make_one_shot_iterator  # features read from an iterator end by themselves too
        next(estimator.predict(lambda: {"age": one_shot(tf.data.Dataset.from_tensors([1])).get_next()}))
    assert "QueueRunner" not in caplog.text


def _variable_node(export_dir, name="weight"):
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(f"{export_dir}/saved_model.pb", "rb") as proto:
        saved.ParseFromString(proto.read())
    return [n for n in saved.meta_graphs[0].graph_def.node if n.name == name][0]


def test_export_copies_the_graphs_assets_and_export_savedmodel_keeps_default_attributes(tmp_path):
    estimator = _estimator(_make_model_fn(1.0), str(tmp_path / "model"))
    estimator.train(_input_fn, steps=1)
    vocabulary = tmp_path / "my_vocab_file"
    vocabulary.write_text("a\nb\n")

    def receiver_with_asset():
        receiver = _receiver()
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, tf.constant(str(vocabulary), name="asset_filepath"))
        return receiver

    export_dir = estimator.export_saved_model(str(tmp_path / "export"), receiver_with_asset).decode()
    assert open(f"{export_dir}/assets/my_vocab_file").read() == "a\nb\n"
    assert "container" not in _variable_node(export_dir).attr  # export_saved_model strips default attributes
    kept = estimator.export_savedmodel(str(tmp_path / "old"), _receiver, strip_default_attrs=False)
    assert "container" in _variable_node(kept.decode()).attr  # the deprecated name keeps them unless asked


def test_export_all_saved_models_exports_the_predict_graph(tmp_path):
    estimator = _estimator(_make_model_fn(3.0), str(tmp_path / "model"))
    estimator.train(_input_fn, steps=1)
    export_dir = estimator.experimental_export_all_saved_models(str(tmp_path / "export"), {"infer": _receiver})
    served = tf.saved_model.load(export_dir)
    assert list(served.signatures["serving_default"](x=tf.constant([[0.0]])).values())[0].numpy().ravel() == [4.0]
    with pytest.raises(ValueError, match=r"modes \['train'\] are not supported"):
        estimator.experimental_export_all_saved_models(str(tmp_path / "e2"), {"infer": _receiver, "train": _receiver})
