"""allow_mix_precision_bf16 (grappler's oneDNN bf16 pass) observed in the executed graph.

These tests need TensorFlow's oneDNN; the `onednn` fixture runs this module in a child process
with TF_ENABLE_ONEDNN_OPTS=1 when it is off here (see conftest.py). They check bf16 numerics, so
they force the real bf16 graph (`force_low_precision`: NPURUN_FORCE_LOW_PRECISION=1), except the
one that pretends the CPU has AMX, where the default policy lowers by itself.
"""
import os
import warnings

import pytest

from npurun import NPURunConfig
from npurun.precision import lists

from .helpers import dtypes_of, executed_nodes, write
from .test_lists import dump_lists

BF16 = "allow_mix_precision_bf16"


def config(**options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NPURunConfig(**options)


@pytest.mark.parametrize("machine", ["forced", "amx_bf16"])
def test_matmul_computes_in_bf16(onednn, machine, request, cpu_features):
    if onednn:
        return
    if machine == "forced":
        request.getfixturevalue("force_low_precision")
    else:
        cpu_features(avx512_bf16=True, amx_bf16=True)
    nodes = executed_nodes(config(precision_mode=BF16))
    assert dtypes_of(nodes, "MatMul") == {"bfloat16"}  # forward and gradient MatMuls
    assert dtypes_of(nodes, "Softmax") == {"bfloat16"}  # infer list, follows a lowered op
    assert dtypes_of(nodes, "Exp") == {"float32"}  # deny list


def test_black_list_addition_stays_float32(onednn, tmp_path, force_low_precision):
    if onednn:
        return
    mixlist = write(tmp_path, "ops_info.json", {"black-list": {"to-add": ["Matmul"]}})
    nodes = executed_nodes(config(precision_mode=BF16, modify_mixlist=mixlist))
    assert dtypes_of(nodes, "MatMul") == {"float32"}


def test_white_list_addition_lowers_an_op_that_was_not_lowered(onednn, tmp_path, force_low_precision):
    if onednn:
        return
    assert dtypes_of(executed_nodes(config(precision_mode=BF16)), "Exp") == {"float32"}
    mixlist = write(tmp_path, "ops_info.json", {"white-list": {"to-add": ["Exp"]}})
    assert dtypes_of(executed_nodes(config(precision_mode=BF16, modify_mixlist=mixlist)), "Exp") == {"bfloat16"}


def test_high_precision_op_type_stays_float32(onednn, tmp_path, force_low_precision):
    if onednn:
        return
    nodes = executed_nodes(config(precision_mode=BF16, op_select_implmode="high_precision",
                                  optypelist_for_implmode="SoftmaxV2"))
    assert dtypes_of(nodes, "Softmax") == {"float32"}
    assert dtypes_of(nodes, "MatMul") == {"bfloat16"}
    # op_precision_mode wins over op_select_implmode/optypelist_for_implmode when all are set.
    ini = write(tmp_path, "op_precision.ini", "MatMulV2=high_precision\n")
    nodes = executed_nodes(config(precision_mode=BF16, op_select_implmode="high_precision",
                                  optypelist_for_implmode="SoftmaxV2", op_precision_mode=ini))
    assert dtypes_of(nodes, "MatMul") == {"float32"}
    assert dtypes_of(nodes, "Softmax") == {"float32"}  # it follows the float32 MatMul now


def test_two_configs_with_different_lists_in_one_process(onednn, tmp_path, force_low_precision):
    if onednn:
        return
    black = config(precision_mode=BF16,
                   modify_mixlist=write(tmp_path, "black.json", {"black-list": {"to-add": ["Matmul"]}}))
    white = config(precision_mode=BF16,
                   modify_mixlist=write(tmp_path, "white.json", {"white-list": {"to-add": ["Exp"]}}))
    environ_before = dict(os.environ)
    black_nodes, white_nodes, black_again = (executed_nodes(black), executed_nodes(white), executed_nodes(black))
    assert dict(os.environ) == environ_before
    assert dtypes_of(black_nodes, "MatMul") == dtypes_of(black_again, "MatMul") == {"float32"}
    assert dtypes_of(black_nodes, "Exp") == dtypes_of(black_again, "Exp") == {"float32"}
    assert dtypes_of(white_nodes, "MatMul") == dtypes_of(white_nodes, "Exp") == {"bfloat16"}


def test_bfloat16_defaults_match_tensorflow(onednn, tmp_path):
    if onednn:
        return
    found = dump_lists(tmp_path, "auto_mixed_precision_onednn_bfloat16")
    for name in lists.LISTS:
        assert found[name] == set(lists.default_list("bfloat16", name)), name


@pytest.mark.slow
def test_example_reaches_float32_accuracy_in_bf16(onednn, tmp_path, force_low_precision):
    if onednn:
        return
    from npurun.example import run_example

    results = {}
    for mode in (None, BF16):
        cfg = config(precision_mode=mode, model_dir=str(tmp_path / str(mode)), tf_random_seed=7)
        results[mode] = run_example(cfg, train_steps=600)
    assert results[None]["accuracy"] > 0.9
    assert results[BF16]["accuracy"] == pytest.approx(results[None]["accuracy"], abs=0.03)
