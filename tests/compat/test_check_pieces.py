"""npurun check over a TensorFlow 1 script and its local modules: each piece removed, check names exactly it.

A clean TF1-style script (with a local module and a local package) has 0 findings that raise; then
one piece at a time is taken away (a coverage entry made unsupported, a name removed from npu_init,
a contrib name removed from the contrib table, a TensorFlow 1 API name, an npurun target module) and
the findings that raise must be exactly the uses of that piece.
"""
import dataclasses
import subprocess
import sys
import textwrap
import types

import pytest

from npurun.adapter import tables as aliases
from npurun.tf1.api_names import generated as tf_api_names
from npurun.tools.check import tensorflow as check_tensorflow
from npurun.adapter.tables import Mapped, Unsupported
from npurun.tools.check import check_file

TRAIN = textwrap.dedent("""\
    import tensorflow as tf
    from npu_bridge.npu_init import *
    import model
    from pkg import helpers
    from tensorflow.contrib import slim

    flags = tf.flags
    FLAGS = flags.FLAGS


    def main(_):
        x = tf.placeholder(tf.float32, [None, 4])
        y = model.net(x)
        opt = npu_tf_optimizer(tf.train.AdamOptimizer(0.1))
        hooks = [NpuEmptyHook()]
        sess = tf.Session(config=npu_config_proto())
        tf.logging.info("built")


    if __name__ == "__main__":
        tf.app.run()
    """)
MODEL = textwrap.dedent("""\
    import tensorflow as tf
    from npu_bridge.estimator.npu_unary_ops import npu_unary_ops


    def net(x):
        h = tf.contrib.layers.fully_connected(x, 4)
        h = npu_unary_ops.gelu(h)
        return tf.contrib.layers.layer_norm(h)
    """)
HELPERS = "from .common import *\n\nstep = tf.train.get_or_create_global_step\nrank = get_npu_rank_id\n"
COMMON = "import tensorflow as tf\nfrom npu_bridge.npu_init import *\n"


def _contrib_table(layers=("fully_connected", "layer_norm")):
    return types.SimpleNamespace(PATHS={}, PACKAGES={"slim": "tf_slim"}, UNSUPPORTED_MODULES={"tpu": "no TPU here"},
                                 MODULES={"layers": {n: Mapped(f"tf_slim:{n}") for n in layers}})


@pytest.fixture
def script(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS)
    (tmp_path / "pkg" / "common.py").write_text(COMMON)
    monkeypatch.setattr(check_tensorflow, "contrib_table", lambda: _contrib_table())
    monkeypatch.setattr(check_tensorflow, "world_available", lambda: True)
    return tmp_path / "train.py"


def _raising(path):
    return {(f.file, f.name) for f in check_file(str(path)) if f.error}


def test_the_clean_script_and_its_local_modules(script):
    findings = check_file(str(script))
    assert _raising(script) == set()
    by_name = {(f.file, f.name): f for f in findings}
    assert by_name[("", "tensorflow.placeholder")].status == check_tensorflow.TF1_WORLD
    assert by_name[("", "tensorflow.train.AdamOptimizer")].status == check_tensorflow.TF1_WORLD
    assert by_name[("", "npu_bridge.npu_init.npu_tf_optimizer")].status == "mapped"
    assert by_name[("model.py", "tensorflow.contrib.layers.layer_norm")].detail.endswith("`tf_slim.layer_norm`")
    assert by_name[("model.py", "npu_bridge.estimator.npu_unary_ops.npu_unary_ops.gelu")].status == "mapped"
    # names that came through a local star import chain (pkg/helpers.py <- pkg/common.py <- npu_init)
    assert by_name[("pkg/helpers.py", "npu_bridge.npu_init.get_npu_rank_id")].status == "mapped"
    assert by_name[("pkg/helpers.py", "tensorflow.train.get_or_create_global_step")].status == \
        check_tensorflow.TF1_WORLD


def test_each_piece_removed_is_named_exactly(script, monkeypatch):
    def removed(piece, expected):
        with monkeypatch.context() as patch:
            piece(patch)
            assert _raising(script) == expected

    npu_init = aliases.MODULES["npu_bridge.npu_init"].names

    def without(name):  # a copy of the npu_init table without `name` (the shared table keeps its order)
        def patch(p):
            module = aliases.MODULES["npu_bridge.npu_init"]
            p.setitem(aliases.MODULES, module.name, dataclasses.replace(
                module, names={k: v for k, v in module.names.items() if k != name}))
        return patch

    removed(lambda p: p.setitem(npu_init, "npu_tf_optimizer", Unsupported("taken away for this test")),
            {("", "npu_bridge.npu_init.npu_tf_optimizer")})
    removed(without("NpuEmptyHook"), {("", "NpuEmptyHook")})  # NameError after the star import
    removed(without("get_npu_rank_id"), {("pkg/helpers.py", "get_npu_rank_id")})
    removed(lambda p: p.setitem(npu_init, "npu_config_proto", Mapped("npurun.no_such_module:npu_config_proto")),
            {("", "npu_bridge.npu_init.npu_config_proto")})
    unary = aliases.MODULES["npu_bridge.estimator.npu_unary_ops.npu_unary_ops"].names
    removed(lambda p: p.setitem(unary, "gelu", Unsupported("taken away for this test")),
            {("model.py", "npu_bridge.estimator.npu_unary_ops.npu_unary_ops.gelu")})
    removed(lambda p: p.setattr(check_tensorflow, "contrib_table", lambda: _contrib_table(layers=("layer_norm",))),
            {("model.py", "tensorflow.contrib.layers.fully_connected")})
    without_slim = types.SimpleNamespace(**{**vars(_contrib_table()), "PACKAGES": {}})
    removed(lambda p: p.setattr(check_tensorflow, "contrib_table", lambda: without_slim),
            {("", "tensorflow.contrib.slim")})
    tf1_without = {k: v for k, v in tf_api_names.TF1.items() if k != "placeholder"}
    removed(lambda p: p.setattr(tf_api_names, "TF1", tf1_without), {("", "tensorflow.placeholder")})
    removed(lambda p: p.setitem(tf_api_names.TF1, "logging", ("warning",)), {("", "tensorflow.logging.info")})
    # Without the TF1 world every TensorFlow 1 and contrib use raises, and check says so.
    with monkeypatch.context() as patch:
        patch.setattr(check_tensorflow, "world_available", lambda: False)
        raising = _raising(script)
    assert {name for _, name in raising} == {
        "tensorflow.flags", "tensorflow.placeholder", "tensorflow.train.AdamOptimizer", "tensorflow.Session",
        "tensorflow.logging.info", "tensorflow.app.run", "tensorflow.contrib.slim",
        "tensorflow.contrib.layers.fully_connected", "tensorflow.contrib.layers.layer_norm",
        "tensorflow.train.get_or_create_global_step"}


def test_removed_modules_and_tf1_paths(tmp_path, monkeypatch):
    monkeypatch.setattr(check_tensorflow, "world_available", lambda: True)
    script = tmp_path / "freeze.py"
    script.write_text(textwrap.dedent("""\
        from tensorflow.python.framework.graph_util import convert_variables_to_constants
        from tensorflow.examples.tutorials.mnist import input_data
        from tensorflow.python.no_such_module import thing
        data = input_data.read_data_sets("/tmp/mnist")
        """))
    found = {f.name: f for f in check_file(str(script))}
    assert found["tensorflow.python.framework.graph_util.convert_variables_to_constants"].status == \
        check_tensorflow.TF1_WORLD
    assert found["tensorflow.examples.tutorials.mnist.input_data"].status == check_tensorflow.TF1_WORLD
    missing = found["tensorflow.python.no_such_module"]
    assert missing.error and "ModuleNotFoundError" in missing.detail
    assert _raising(script) == {("", "tensorflow.python.no_such_module")}


def test_check_is_static_it_never_imports_tensorflow(script):
    code = ("import sys; from npurun.tools.check import check_file; check_file(sys.argv[1]); "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tf_slim', 'keras')], "
            "sorted(m for m in sys.modules if m.startswith('tensorflow'))")
    result = subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_imports_of_modules_that_are_neither_local_nor_installed(tmp_path):
    script = tmp_path / "train.py"
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    script.write_text(textwrap.dedent("""\
        import os
        import helper
        import moxing as mox
        try:
            import apex
        except ImportError:
            apex = None
        """))
    assert _raising(script) == {("", "moxing")}
    (tmp_path / "dataloader").mkdir()  # MobileNetV2 style: a local directory without __init__.py
    (tmp_path / "dataloader" / "data_provider.py").write_text("import tensorflow as tf\n")
    script.write_text("from dataloader import data_provider\nimport easydict\n")
    assert _raising(script) == {("", "easydict")}
    script.write_text("import sys\nsys.path.append('/somewhere')\nimport moxing\n")
    found = {f.name: f for f in check_file(str(script))}
    assert not found["moxing"].error and found["moxing"].status == "not found here"


def test_tf_and_os_from_the_star_import_are_followed(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text("from npu_bridge.npu_init import *\nsess = tf.Session()\nx = tf.no_such_name\n"
                      "p = os.path.join('a', 'b')\nv = tf.__version__\n")
    for world in (True, False):  # npu_init's tf: the TF1 world's tensorflow, or tf.compat.v1 without it
        monkeypatch.setattr(check_tensorflow, "world_available", lambda: world)
        found = {f.name: f for f in check_file(str(script))}
        assert {name for _, name in _raising(script)} == {
            "tensorflow.no_such_name" if world else "tensorflow.compat.v1.no_such_name"}
        assert not any("os" in name for name in found)


def test_adapter_names_missing_from_the_table_raise_where_imported_or_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("from npu_bridge.npu_init import no_such_name, NPURunConfig\n"
                      "from npu_bridge.estimator import npu_ops, not_a_module\n"
                      "y = npu_ops.dropout(1.0, 0.5)\nz = npu_ops.nothing_here(1)\n")
    assert _raising(script) == {("", "npu_bridge.npu_init.no_such_name"), ("", "npu_bridge.estimator.not_a_module"),
                                ("", "npu_bridge.estimator.npu_ops.nothing_here")}


def test_a_local_star_import_brings_the_local_modules_own_names(tmp_path):
    # ModelZoo style (DANN): `from utils import *` where utils.py defines the helpers the script calls
    (tmp_path / "utils.py").write_text(textwrap.dedent("""\
        from npu_bridge.npu_init import *
        import tensorflow as tf
        import numpy as np

        def weight_variable(shape):
            return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

        class BatchGen:
            pass

        if True:
            DEFAULT_BATCH = 32
        for _i, NAME in enumerate(["a"]):
            pass
        """))
    (tmp_path / "listed.py").write_text("__all__ = ['exported_helper']\ndef exported_helper(): pass\n"
                                        "def hidden_helper(): pass\n")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        from npu_bridge.npu_init import *
        from utils import *
        from listed import *
        w = weight_variable([2]); g = BatchGen(); b = DEFAULT_BATCH; n = NAME; a = np.zeros(1)
        e = exported_helper()
        h = hidden_helper()
        missing = not_defined_anywhere()
        """))
    assert _raising(script) == {("", "hidden_helper"), ("", "not_defined_anywhere")}


def test_python2_builtins_in_version_branches_are_not_counted_as_raising(tmp_path):
    # BERT tokenization style: `unicode` only on the six.PY2 branch; a real missing name still raises
    script = tmp_path / "tokenization.py"
    script.write_text(textwrap.dedent("""\
        import six
        from npu_bridge.npu_init import *

        def convert_to_unicode(text):
            if six.PY3:
                return text if isinstance(text, str) else text.decode("utf-8")
            elif six.PY2:
                return text if isinstance(text, unicode) else text.decode("utf-8")
            missing_helper(text)
        """))
    found = {f.name: f for f in check_file(str(script))}
    assert found["unicode"].status == "Python 2 name" and not found["unicode"].error
    assert _raising(script) == {("", "missing_helper")}
