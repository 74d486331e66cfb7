"""List edits -> TensorFlow's environment variables; the default lists match TensorFlow 2.21's."""
import glob
import os
import warnings

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from npurun.config.parsers import parse_mixlist
from npurun.precision import lists

P = lists.ENV_PREFIX
v1 = tf.compat.v1


def env_of(plan):
    return {key[len(P):]: value for key, value in plan.environment().items() if value}


def test_seed_example_file_moves_ops_as_documented():
    # The product document's example: black to-remove Yolo, to-add Matmul, Cast; white to-remove Conv2D,
    # to-add Bias.
    edits = parse_mixlist('{"black-list": {"to-remove": ["Yolo"], "to-add": ["Matmul", "Cast"]},'
                          ' "white-list": {"to-remove": ["Conv2D"], "to-add": ["Bias"]}}')
    with pytest.warns(UserWarning) as caught:
        plan = lists.plan_lists("float16", edits)
    messages = [str(w.message) for w in caught]
    assert any("'Yolo'" in m and "neither a TensorFlow op type" in m for m in messages)
    assert any("'Yolo' is not on TensorFlow's float16 deny list" in m for m in messages)
    assert plan.moves == {"MatMul": "deny", "Cast": "deny", "Conv2D": "infer", "BiasAdd": "allow"}
    assert "MatMul" in plan.effective("deny") and "MatMul" not in plan.effective("allow")
    assert "Conv2D" in plan.effective("infer") and "BiasAdd" in plan.effective("allow")
    env = env_of(plan)
    assert env["DENYLIST_ADD"] == "Cast,MatMul"
    assert env["ALLOWLIST_ADD"] == "BiasAdd"
    assert env["INFERLIST_ADD"] == "Conv2D"
    # Each moved op leaves every other list, so TensorFlow never sees an op on two lists.
    assert env["CLEARLIST_REMOVE"] == "BiasAdd,Cast,Conv2D,MatMul"


def test_every_list_variable_is_set_so_a_session_owns_its_lists():
    plan = lists.plan_lists("bfloat16")
    names = {key[len(P):] for key in plan.environment()}
    assert names == {f"{l}_{a}" for l in ("ALLOWLIST", "DENYLIST", "INFERLIST", "CLEARLIST", "WHITELIST",
                                          "GRAYLIST", "BLACKLIST") for a in ("ADD", "REMOVE")}
    assert set(plan.environment().values()) == {""}


def test_high_precision_wins_over_a_white_list_addition():
    edits = parse_mixlist('{"white-list": {"to-add": ["SoftmaxV2"]}}')
    with pytest.warns(UserWarning, match="high_precision wins"):
        plan = lists.plan_lists("bfloat16", edits, high_precision=["Softmax"])
    assert plan.moves == {"Softmax": "deny"}


def test_one_op_on_two_lists_is_an_error():
    edits = parse_mixlist('{"black-list": {"to-add": ["Matmul"]}, "white-list": {"to-add": ["MatMul"]}}')
    with pytest.raises(ValueError, match="'MatMul' is added to both (white-list and black-list|black-list and white-list)"):
        lists.plan_lists("float16", edits)


def test_white_list_addition_without_a_kernel_is_dropped():
    edits = parse_mixlist('{"white-list": {"to-add": ["Exp"]}}')
    with pytest.warns(UserWarning, match="no bfloat16 kernel"):
        plan = lists.plan_lists("bfloat16", edits, lowerable=lambda op: False)
    assert plan.moves == {}


def test_gray_list_removal_takes_the_op_off_every_list():
    plan = lists.plan_lists("float16", parse_mixlist('{"gray-list": {"to-remove": ["Tanh"]}}'))
    assert plan.moves == {"Tanh": None}
    assert "Tanh" not in plan.effective("infer")
    assert "Tanh" in env_of(plan)["INFERLIST_REMOVE"]


def dump_lists(tmp_path, rewrite_field):
    """TensorFlow's own lists for one pass, from its TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH dump."""
    graph = tf.Graph()
    with graph.as_default():
        w = v1.get_variable("w", [16, 16])
        fetch = tf.reduce_sum(tf.tanh(tf.matmul(tf.random.normal([16, 16]), w)))
        init = v1.global_variables_initializer()
    config = v1.ConfigProto()
    setattr(config.graph_options.rewrite_options, rewrite_field, rewriter_config_pb2.RewriterConfig.ON)
    key = P + "LOG_PATH"
    os.environ[key] = str(tmp_path)
    try:
        with v1.Session(graph=graph, config=config) as session:
            session.run(init)
            session.run(fetch)
    finally:
        del os.environ[key]
    (path,) = glob.glob(str(tmp_path / "paintbuckets*"))
    found, current = {}, None
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line.endswith(":"):
            current = line[:-1].replace("List", "").lower()
            found[current] = set()
        elif line:
            found[current].add(line)
    return found


def test_float16_defaults_match_tensorflow(tmp_path):
    found = dump_lists(tmp_path, "auto_mixed_precision_cpu")
    for name in lists.LISTS:
        assert found[name] == set(lists.default_list("float16", name)), name
