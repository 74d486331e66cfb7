"""The Ascend -> TensorFlow op name table and the warning for unknown names."""
import warnings

import pytest

from npurun.precision import op_names


def test_every_table_target_is_a_registered_tensorflow_op():
    missing = {ascend: tf_op for ascend, targets in op_names.ASCEND_TO_TF.items() for tf_op in targets
               if not op_names.is_tf_op(tf_op)}
    assert missing == {}


def test_table_keys_are_not_tensorflow_names():
    # TensorFlow's own names win, so a table entry under a TensorFlow name would never be used.
    assert [name for name in op_names.ASCEND_TO_TF if op_names.is_tf_op(name)] == []


def test_translation_of_documented_ascend_spellings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert op_names.translate(["Matmul", "SoftmaxV2", "Pooling", "Bias", "Conv2D", "Cast"], "test") == (
            "MatMul", "Softmax", "MaxPool", "AvgPool", "BiasAdd", "Conv2D", "Cast")
        assert op_names.translate(["AvgPoolV2", "ReduceMeanD", "MatMulV2", "MatMul"], "test") == ("AvgPool", "Mean", "MatMul")


def test_unknown_name_warns_naming_it_and_is_kept():
    with pytest.warns(UserWarning, match=r"'Yolo' in modify_mixlist black-list to-remove"):
        assert op_names.translate(["Yolo"], "modify_mixlist black-list to-remove") == ("Yolo",)
