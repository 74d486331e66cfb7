"""tf.estimator conformance: supervised receivers, early stopping on damaged event files and
BestExporter's first export, as TensorFlow 2.15's tf.estimator has them; a behaviour each."""
import os

import pytest
import tensorflow as tf

from npurun.estimator import early_stopping, experimental, export, exporters

v1 = tf.compat.v1


def test_raw_supervised_receiver_names_a_single_feature_input_and_a_single_label_label():
    features = {"feature_1": tf.constant(["hello"]), "feature_2": tf.constant([42])}
    labels = {"foo": tf.constant([5]), "bar": tf.constant([6])}
    with tf.Graph().as_default():
        receiver = experimental.build_raw_supervised_input_receiver_fn(features["feature_1"], labels)()
        assert isinstance(receiver.features, tf.Tensor)
        assert set(receiver.receiver_tensors) == {"input", "foo", "bar"}
        receiver = experimental.build_raw_supervised_input_receiver_fn(features["feature_1"], labels["foo"])()
        assert set(receiver.receiver_tensors) == {"input", "label"}
        assert receiver.receiver_tensors["input"].dtype == tf.string


def test_supervised_receiver_from_an_input_fn_and_its_arguments():
    def input_fn(feature_key="x"):
        return ({feature_key: tf.constant([[1], [1]]), "y": tf.constant(["hello", "goodbye"])},
                {"my_label": tf.constant([[1], [1]])})

    outer = tf.Graph()
    with outer.as_default():
        receiver = export.build_supervised_input_receiver_fn_from_input_fn(input_fn, feature_key="z")()
    assert set(receiver.features) == {"z", "y"} and set(receiver.labels) == {"my_label"}
    assert set(receiver.receiver_tensors) == {"z", "y", "my_label"}
    assert receiver.features["z"].graph is outer and receiver.features["z"].shape.as_list() == [None, 1]
    assert receiver.features["y"].dtype == tf.string


def _write_losses(directory, losses):
    with tf.Graph().as_default():
        writer = v1.summary.FileWriter(directory)
        for step, loss in losses:
            writer.add_summary(v1.Summary(value=[v1.Summary.Value(tag="loss", simple_value=loss)]), step)
        writer.close()
    return os.path.join(directory, os.listdir(directory)[0])


def test_a_damaged_event_file_keeps_what_was_read_before_the_damage(tmp_path):
    path = _write_losses(str(tmp_path), [(1, 1.0), (2, 3.0)])
    data = open(path, "rb").read()
    with open(path, "wb") as damaged:  # the last record's checksum no longer matches
        damaged.write(data[:-3] + b"\0\0\0")
    assert dict(early_stopping.read_eval_metrics(str(tmp_path))) == {1: {"loss": 1.0}}


def test_early_stopping_needs_an_estimator():
    with pytest.raises(TypeError, match="must have type `tf.estimator.Estimator`"):
        experimental.make_early_stopping_hook(estimator=object(), should_stop_fn=lambda: True)


class _FakeEstimator:
    """What BestExporter asks of an estimator: model_dir and export_saved_model."""

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.exports = []

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                           checkpoint_path=None):
        self.exports.append(checkpoint_path)
        return f"export-{len(self.exports)}"


def test_best_exporter_exports_on_its_first_call_then_only_better_results(tmp_path):
    _write_losses(str(tmp_path / "eval"), [(1, 50.0), (2, 60.0)])  # a previous run's evaluations
    estimator = _FakeEstimator(str(tmp_path))
    best = exporters.BestExporter(serving_input_receiver_fn=lambda: None, exports_to_keep=None)
    base = str(tmp_path / "export" / "best")
    assert best.export(estimator, base, "ckpt-3", {"loss": 100.0}, False) == "export-1"
    assert best.export(estimator, base, "ckpt-4", {"loss": 120.0}, False) is None
    assert best.export(estimator, base, "ckpt-5", {"loss": 10.0}, False) == "export-2"
    assert estimator.exports == ["ckpt-3", "ckpt-5"]


def test_parse_example_specs_add_the_label_and_weight_to_the_features():
    from npurun.estimator import parsing

    columns = [tf.feature_column.numeric_column("x", shape=(2,))]
    spec = parsing.classifier_parse_example_spec(columns, "y", weight_column="w")
    assert spec["y"] == tf.io.FixedLenFeature((1,), tf.int64) and spec["w"].dtype == tf.float32
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 2.0])),
        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
        "w": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5]))}))
    with tf.Graph().as_default(), v1.Session() as sess:  # whichever mode the process is in
        parsed = sess.run(tf.io.parse_example([example.SerializeToString()], spec))
    assert parsed["x"].tolist() == [[1.0, 2.0]] and parsed["y"].tolist() == [[3]]
    regression = parsing.regressor_parse_example_spec(columns, "y", label_dimension=2, label_default=(0.0, 0.0))
    assert regression["y"] == tf.io.FixedLenFeature((2,), tf.float32, (0.0, 0.0))
    with pytest.raises(ValueError, match="label should not be used as feature"):
        parsing.classifier_parse_example_spec(columns, "x")
    with pytest.raises(ValueError, match="weight_column should be an instance of tf.feature_column.numeric_column"):
        parsing.classifier_parse_example_spec(columns, "y", weight_column=columns)


class _Config:
    def __init__(self, is_chief):
        self.is_chief = is_chief


class _Worker:
    def __init__(self, model_dir, is_chief):
        self.model_dir, self.config = model_dir, _Config(is_chief)


def test_stop_at_checkpoint_step_waits_for_the_chiefs_checkpoint(tmp_path, monkeypatch):
    import time

    chief_hook = experimental.make_stop_at_checkpoint_step_hook(_Worker(str(tmp_path), True), 10)
    assert isinstance(chief_hook, v1.train.StopAtStepHook)
    sleeps = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    hook = experimental.make_stop_at_checkpoint_step_hook(_Worker(str(tmp_path), False), 10,
                                                          wait_after_file_check_secs=7)

    def run_once(checkpointed_step):
        with tf.Graph().as_default():
            step = v1.train.create_global_step()
            if checkpointed_step is not None:
                with v1.Session() as sess:
                    sess.run(step.assign(checkpointed_step))
                    v1.train.Saver().save(sess, os.path.join(str(tmp_path), "model.ckpt"),
                                          global_step=checkpointed_step)
            assign_ten, no_op = step.assign(10), tf.no_op()
            with v1.train.SingularMonitoredSession(hooks=[hook]) as session:
                session.raw_session().run(assign_ten)
                session.run(no_op)
                return session.should_stop()

    assert not run_once(None) and sleeps == [7]  # no checkpoint yet: wait, go on
    assert not run_once(9) and sleeps == [7, 7]  # the chief is not there yet
    assert run_once(10) and sleeps == [7, 7]  # the chief's checkpoint is at the last step: stop
