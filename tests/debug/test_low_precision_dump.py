"""Dumps under a low-precision mode hold what the executed graph computed; `dump compare` against a
float32 run lines them up by op (casts with the tensor they convert) in graph order, `--plot`
draws the relative error."""
import os
import time

import numpy as np
import pytest
import tensorflow as tf

import npurun
from npurun.debug.cli import main
from npurun.debug.dump_files import open_dump
from npurun.runtime.contributors import build_plan

from .helpers import only_subdir

RNG = np.random.RandomState(0)
X = RNG.randn(8, 16).astype(np.float32)
W = RNG.randn(16, 4).astype(np.float32)


def model():
    x = tf.constant(X, name="x")
    w = tf.compat.v1.get_variable("w", initializer=tf.constant(W))
    y = tf.matmul(x, w, name="matmul")
    loss = tf.reduce_sum(tf.square(tf.nn.relu(y, name="relu"), name="square"), name="loss")
    step = tf.compat.v1.train.get_or_create_global_step()
    train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step, name="train")
    return [train, loss]


def dump(root, precision_mode):
    options = npurun.NPURunConfig(precision_mode=precision_mode, dump_config=npurun.DumpConfig(
        enable_dump=True, dump_path=str(root), dump_step="0")).options
    graph = tf.Graph()
    with graph.as_default():
        fetch = model()
        plan = build_plan(options, "train")
        with plan.environment(), tf.compat.v1.train.SingularMonitoredSession(hooks=plan.hooks,
                                                                             config=plan.config_proto) as session:
            session.run(fetch)
    return only_subdir(root)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    os.environ["NPURUN_FORCE_LOW_PRECISION"] = "1"  # the fp16 run really runs fp16 on any CPU
    try:
        low = dump(tmp_path_factory.mktemp("fp16"), "allow_mix_precision")
    finally:
        del os.environ["NPURUN_FORCE_LOW_PRECISION"]
    full = dump(tmp_path_factory.mktemp("fp32"), "force_fp32")
    return low, full


def test_the_dump_holds_the_float16_tensors_and_casts_that_ran(dumps):
    records = open_dump(dumps[0]).records
    by_op = {(r["op"], r["io"], r["slot"]): r for r in records}
    matmul = by_op[("matmul", "output", 0)]
    assert matmul["dtype"] == "float16" and matmul["type"] in ("MatMul", "_MklMatMul")
    casts = [r for r in records if r.get("original_op") == "x" and r["op"] != "x"]
    # a Cast, or the Const grappler folded the cast of the constant x into
    assert casts and casts[0]["dtype"] == "float16" and casts[0]["type"] in ("Cast", "Const")
    assert by_op[("loss", "output", 0)]["dtype"] == "float32"
    # the values are the executed ones: the fp16 product, not the float32 one
    value = np.load(os.path.join(dumps[0], matmul["file"]))
    assert value.dtype == np.float16
    np.testing.assert_allclose(value.astype(np.float32), X @ W, rtol=1e-2, atol=1e-2)
    assert not np.array_equal(value.astype(np.float32), X @ W)
    # graph order: the cast of x (which replaced x in the executed graph) comes before matmul
    names = [r["op"] for r in records]
    assert names.index(casts[0]["op"]) < names.index("matmul") < names.index("loss")


def test_the_float32_dump_has_float32_tensors(dumps):
    records = open_dump(dumps[1]).records
    assert {r["dtype"] for r in records if r["op"] in ("matmul", "loss")} == {"float32"}


def test_compare_lines_up_ops_and_casts_in_graph_order_and_plots(dumps, tmp_path, capsys):
    png = tmp_path / "error.png"
    status = main(["dump", "compare", dumps[0], dumps[1], "--plot", str(png)])
    out = capsys.readouterr().out
    assert status == 1  # float16 differs from float32 beyond the default tolerance
    rows = [line.split() for line in out.splitlines() if line.startswith("0 ")]
    ops = [row[1] for row in rows]
    matmul = rows[ops.index("matmul")]
    assert matmul[3] == "float16/float32" and matmul[4] == "mismatch" and float(matmul[6]) > 0
    cast = next(row for row in rows if row[1].startswith("x-0-CastTo"))
    assert cast[2:4] == ["(vs", "x)"]  # the cast is compared with the float32 x it converts
    assert ops.index("matmul") < ops.index("loss")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert f"plot: {png}" in out


def test_show_and_compare_take_the_newest_dump_by_time_not_by_name(dumps, tmp_path, capsys):
    root = tmp_path / "root"
    import shutil

    shutil.copytree(dumps[1], root / "train-20990101T000000.000000")  # sorts last by name
    time.sleep(0.05)
    shutil.copytree(dumps[0], root / "eval-20000101T000000.000000")   # written last
    newest = time.time()
    os.utime(root / "train-20990101T000000.000000" / "index.jsonl", (newest - 100, newest - 100))
    assert open_dump(str(root)).path.endswith("eval-20000101T000000.000000")
    assert main(["dump", "show", str(root), "--op", "matmul"]) == 0
    assert "eval-20000101T000000.000000" in capsys.readouterr().out
