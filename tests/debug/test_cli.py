"""`npurun dump ls|show|compare` on real dumps; compare finds a deliberately perturbed tensor."""
import argparse
import os
import shutil

import numpy as np
import pytest

import npurun
from npurun.debug.cli import add_dump_commands, main
from npurun.debug.compare import compare_arrays
from npurun.debug.dump_files import open_dump

from .helpers import only_subdir, run_plan


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory):
    """A real dump of steps 0-2 of the linear model, every op's outputs."""
    root = tmp_path_factory.mktemp("dump")
    options = npurun.NPURunConfig(dump_config=npurun.DumpConfig(enable_dump=True, dump_path=str(root),
                                                                dump_step="0-2")).options
    run_plan(options, runs=3)
    return only_subdir(root)


def _copy(dump_dir, tmp_path, name="b"):
    target = tmp_path / name
    shutil.copytree(dump_dir, target)
    return str(target)


def _perturb(path, op, step, delta):
    dump = open_dump(path)
    record = next(r for r in dump.records if r["op"] == op and r["step"] == step and r["io"] == "output")
    value = dump.load(record)
    np.save(os.path.join(path, record["file"]), value + np.asarray(delta, value.dtype))


def test_add_dump_commands_registers_ls_show_compare_with_handlers():
    parser = argparse.ArgumentParser(prog="npurun")
    add_dump_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["dump", "compare", "A", "B", "--rtol", "0.1"])
    assert (args.a, args.b, args.rtol, args.atol) == ("A", "B", 0.1, 1e-8) and callable(args.handler)
    assert callable(parser.parse_args(["dump", "ls", "P"]).handler)
    assert parser.parse_args(["dump", "show", "P", "--op", "matmul", "--step", "2"]).op == "matmul"


def test_ls_lists_every_tensor(dump_dir, capsys):
    assert main(["dump", "ls", os.path.dirname(dump_dir)]) == 0  # a dump_path holding the dump works too
    out = capsys.readouterr().out
    assert f"{dump_dir}: {len(open_dump(dump_dir).records)} tensor(s)" in out
    assert "step_1/matmul.output.0.npy" in out and "MatMul" in out


def test_show_prints_statistics_of_the_selected_op(dump_dir, capsys):
    assert main(["dump", "show", dump_dir, "--op", "x"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[1].split(), [line.split() for line in lines[2:]]
    assert header == ["step", "op", "type", "slot", "shape", "dtype", "min", "max", "mean", "std", "nan", "inf"]
    assert [row[:8] for row in rows] == [[str(s), "x", "Const", "output:0", "[2,2]", "float32", "1", "4"]
                                         for s in (0, 1, 2)]
    assert main(["dump", "show", dump_dir, "--op", "nope"]) == 2


def test_compare_identical_dumps_passes(dump_dir, tmp_path, capsys):
    assert main(["dump", "compare", dump_dir, _copy(dump_dir, tmp_path)]) == 0
    assert "OK:" in capsys.readouterr().out


def test_compare_finds_the_perturbed_tensor_first_and_fails(dump_dir, tmp_path, capsys):
    other = _copy(dump_dir, tmp_path)
    _perturb(other, "matmul", 1, 0.5)
    _perturb(other, "loss", 2, 3.0)  # a later one: must not be named first
    assert main(["dump", "compare", dump_dir, other]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH: 2 of" in out and "first: matmul output:0 (step 1) (mismatch, max_abs=0.5" in out


def test_compare_tolerance_decides(dump_dir, tmp_path, capsys):
    other = _copy(dump_dir, tmp_path)
    _perturb(other, "matmul", 0, 1e-3)
    assert main(["dump", "compare", dump_dir, other, "--atol", "1e-2"]) == 0
    assert main(["dump", "compare", dump_dir, other, "--atol", "1e-4", "--rtol", "0"]) == 1


def test_compare_without_common_tensors_is_a_usage_error(dump_dir, tmp_path, capsys):
    other = tmp_path / "empty"
    other.mkdir()
    (other / "index.jsonl").write_text("")
    assert main(["dump", "compare", dump_dir, str(other)]) == 2
    assert main(["dump", "ls", str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize("a, b, status, max_abs", [
    ([1.0, np.nan, np.inf], [1.0, np.nan, np.inf], "ok", 0.0),            # NaN == NaN, inf == inf
    ([1.0, np.inf], [1.0, -np.inf], "mismatch", np.inf),
    ([1.0, 2.0], [1.0, np.nan], "mismatch", np.inf),
    ([0.0, 2.0], [0.0, 2.5], "mismatch", 0.5),
    ([[1.0, 2.0]], [1.0, 2.0], "shape", None),
])
def test_compare_arrays_rules(a, b, status, max_abs):
    result = compare_arrays(np.array(a), np.array(b), rtol=1e-5, atol=1e-8)
    assert result[0] == status
    if max_abs is not None:
        assert result[1] == max_abs


def test_relative_error_is_relative_to_b():
    _, max_abs, max_rel, bad = compare_arrays(np.array([2.0, 1.0]), np.array([1.0, 1.0]), 1e-5, 1e-8)
    assert (max_abs, max_rel, bad) == (1.0, 1.0, 1)
    _, _, max_rel, _ = compare_arrays(np.array([1.0]), np.array([0.0]), 1e-5, 1e-8)
    assert max_rel == np.inf
