"""The dump format: what DumpWriter writes is what open_dump reads back."""
import json
import os

import ml_dtypes
import numpy as np

from npurun.debug.dump_files import DumpWriter, dump_dirs, open_dump, tensor_file
from npurun.debug.stats import tensor_stats


def _write(tmp_path, value, **kwargs):
    writer = DumpWriter(str(tmp_path), "train")
    record = writer.write(kind="tensor", step=kwargs.pop("step", 3), op=kwargs.pop("op", "scope/op"), op_type="T",
                          io="output", slot=0, tensor="scope/op:0", value=value, **kwargs)
    writer.close()
    return writer.path, record


def test_nothing_is_created_before_the_first_write(tmp_path):
    DumpWriter(str(tmp_path), "train").close()
    assert os.listdir(tmp_path) == []


def test_round_trip_of_a_float_tensor(tmp_path):
    value = np.array([[1.5, -2.0]], np.float32)
    path, record = _write(tmp_path, value)
    assert os.path.basename(path).startswith("train-") and dump_dirs(str(tmp_path)) == [path]
    assert record["file"] == "step_3/scope/op.output.0.npy"
    dump = open_dump(str(tmp_path))
    assert dump.records == (json.loads(json.dumps(record)),)
    np.testing.assert_array_equal(dump.load(dump.records[0]), value)


def test_bfloat16_is_stored_widened_and_keeps_its_dtype_name(tmp_path):
    value = np.array([1.0, np.inf], ml_dtypes.bfloat16)
    path, record = _write(tmp_path, value)
    assert record["dtype"] == "bfloat16" and record["stats"]["pos_inf"] == 1
    loaded = open_dump(path).load(record)
    assert loaded.dtype == np.float32 and loaded.tolist() == [1.0, np.inf]


def test_string_tensors_are_stored_as_bytes(tmp_path):
    value = np.array([b"a", b"bc"], dtype=object)  # what Session.run returns for tf.string
    path, record = _write(tmp_path, value)
    assert open_dump(path).load(record).tolist() == [b"a", b"bc"]
    assert record["stats"] == {"size": 2}


def test_op_names_cannot_escape_the_dump_directory():
    assert tensor_file(1, "tensor", "../../etc/passwd", "output", 0) == "step_1/etc/passwd.output.0.npy"
    assert tensor_file(None, "exception", "a>b/c", "input", 2) == "exception/a_b/c.input.2.npy"
    assert tensor_file(4, "overflow", "x", "output", 0) == "step_4/overflow/x.output.0.npy"


def test_stats_are_over_finite_elements_with_nonfinite_counts():
    stats = tensor_stats(np.array([1.0, 3.0, np.nan, np.inf, -np.inf, 0.0], np.float32))
    assert stats == {"size": 6, "min": 0.0, "max": 3.0, "mean": 4.0 / 3, "std": np.std([1.0, 3.0, 0.0]),
                     "nan": 1, "pos_inf": 1, "neg_inf": 1, "zeros": 1}
    assert tensor_stats(np.array([True, False]))["mean"] == 0.5
    assert tensor_stats(np.array([np.nan], np.float32))["min"] is None
