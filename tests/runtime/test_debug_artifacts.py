"""op_debug_level and debug_dir: the files each level writes under <debug_dir>/kernel_meta.

With XLA compiling, the dump flags are process-wide and read once, so those runs are fresh
processes; the graph dumps (XLA off) run here.
"""
import glob
import json
import os

import pytest

import helpers
from helpers import options, placeholder_step, session_for, train_in_subprocess
from op_names import FUSED_MATMUL


def files(folder, pattern):
    return glob.glob(os.path.join(str(folder), "kernel_meta", pattern))


def xla_run(tmp_path, level, **extra):
    result, _ = train_in_subprocess(jit_compile="true", op_debug_level=level, debug_dir=str(tmp_path), **extra)
    assert "XlaLaunch" in result["ops"]
    assert not any("XLA_FLAGS" in w for w in result["warnings"])  # the flags were in time
    return result


def assert_source_mapping_names_helpers(path):
    """The ops' source lines point into helpers.py (where the model is built), wherever the
    checkout lives (the file is compared, not its path's spelling)."""
    locations = json.load(open(path))
    files_named = {where.rsplit(":", 1)[0] for where in locations.values()}
    assert any(os.path.exists(f) and os.path.samefile(f, helpers.__file__) for f in files_named), files_named


def multi_op_fusions(tmp_path):
    """Fused kernels of several instructions in the optimised HLO (single-op wrappers excluded)."""
    (after,) = [f for f in files(tmp_path, "*cluster_*cpu_after_optimizations.txt")]
    text = open(after).read()
    return [line for line in text.splitlines() if " fusion(" in line and "%wrapped_" not in line]


def test_level_1_dumps_hlo_with_source_mapping_code_and_graphs(tmp_path):
    xla_run(tmp_path, 1)
    (before,) = files(tmp_path, "*cluster_*before_optimizations.txt")
    assert 'op_name="' in open(before).read()  # each instruction names its TensorFlow op
    assert files(tmp_path, "*cluster_*cpu_after_optimizations.txt")
    assert files(tmp_path, "*.ir-with-opt.ll") and files(tmp_path, "*.o")
    assert_source_mapping_names_helpers(files(tmp_path, "train_graph_loc.json")[0])
    assert files(tmp_path, "train_graph.pbtxt") and files(tmp_path, "train_partition_0.pbtxt")
    assert not files(tmp_path, "*probe*")  # npurun's flag probe cleans up after itself
    assert multi_op_fusions(tmp_path)  # XLA fuses by default (compare the UBFusion test)


def test_level_2_turns_compiler_optimisation_off(tmp_path):
    xla_run(tmp_path, 2)
    (debug_options,) = files(tmp_path, "*cluster_*debug_options")
    text = open(debug_options).read()
    assert "xla_backend_optimization_level: 0" in text
    assert files(tmp_path, "*cluster_*before_optimizations.txt") and files(tmp_path, "*.o")


def test_level_3_keeps_compiled_artefacts_only(tmp_path):
    xla_run(tmp_path, 3)
    assert files(tmp_path, "*cluster_*cpu_after_optimizations.hlo.pb") and files(tmp_path, "*.o")
    assert not files(tmp_path, "*.txt") and not files(tmp_path, "train_graph.pbtxt")
    assert files(tmp_path, "train_partition_0.pbtxt")


def test_level_4_adds_fusion_descriptions(tmp_path):
    xla_run(tmp_path, 4)
    assert files(tmp_path, "*cluster_*_fusion.html")
    assert files(tmp_path, "*cluster_*cpu_after_optimizations.hlo.pb")
    assert files(tmp_path, "*cluster_*cpu_after_optimizations.txt")
    assert files(tmp_path, "train_fusions.json")


def test_ub_fusion_all_off_disables_xla_fusion(tmp_path):
    switch = tmp_path / "fusion_switch.cfg"
    switch.write_text(json.dumps({"Switch": {"UBFusion": {"ALL": "off"}}}))
    xla_run(tmp_path, 1, fusion_switch_file=str(switch))
    (debug_options,) = files(tmp_path, "*cluster_*debug_options")
    assert "xla_disable_hlo_passes" in open(debug_options).read()
    assert multi_op_fusions(tmp_path) == []


def graph_dump(tmp_path, level):
    with session_for(options(op_debug_level=level, debug_dir=str(tmp_path)), placeholder_step) as built:
        built.run()
        built.run()
    return sorted(os.path.basename(f) for f in files(tmp_path, "*"))


def dumped(both_onednn, probe):
    return both_onednn.workdir("runtime:" + probe)


def test_without_xla_levels_1_and_2_dump_the_graphs_with_source_mapping(both_onednn):
    assert both_onednn.value("runtime:dump_level_1") == ["train_graph.pbtxt", "train_graph_loc.json",
                                                         "train_partition_0.pbtxt"]
    folder = dumped(both_onednn, "dump_level_1")
    assert_source_mapping_names_helpers(files(folder, "train_graph_loc.json")[0])
    executed = open(files(folder, "train_partition_0.pbtxt")[0]).read()
    assert any(f'op: "{op}"' in executed for op in FUSED_MATMUL)  # the graph as run, after grappler


def test_without_xla_level_3_keeps_the_executed_graphs_only(both_onednn):
    assert both_onednn.value("runtime:dump_level_3") == ["train_partition_0.pbtxt"]


def test_without_xla_level_4_describes_the_fused_kernels(both_onednn):
    assert both_onednn.value("runtime:dump_level_4") == ["train_fusions.json", "train_partition_0.pbtxt"]
    fused = json.load(open(files(dumped(both_onednn, "dump_level_4"), "train_fusions.json")[0]))
    bias_relu = next(f for f in fused if f["fused_ops"] == ["BiasAdd", "Relu"])
    assert bias_relu["op"] in FUSED_MATMUL
    assert {f["op"] for f in fused} <= FUSED_MATMUL


def test_level_0_writes_nothing(tmp_path):
    graph_dump(tmp_path, 0)
    assert not os.path.exists(tmp_path / "kernel_meta")


def test_default_folder_is_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with session_for(options(op_debug_level=3), placeholder_step) as built:
        built.run()
    assert os.path.isfile(tmp_path / "kernel_meta" / "train_partition_0.pbtxt")


def test_source_mapping_keeps_user_files_under_a_folder_named_npurun():
    # A checkout at .../npurun/ must not look like npurun's own (library) frames.
    import tensorflow

    from npurun.runtime.debug_artifacts import _user_frame

    user = os.path.join(os.sep, "home", "me", "npurun", "tests", "train.py")
    library = os.path.join(os.path.dirname(tensorflow.__file__), "python", "ops", "math_ops.py")
    own = os.path.join(os.path.dirname(helpers.compilation.__file__), "compilation.py")
    assert _user_frame([(user, 3, "model", ""), (own, 7, "compile_step", ""), (library, 10, "matmul", "")]) \
        == (user, 3)
