"""Kernel debug artefacts: `op_debug_level` (0-4) and `debug_dir`.

Rules:
  - Artefacts go to `<debug_dir or the current directory>/kernel_meta` (created when needed); the
    folder is resolved when the plan is built.
  - When XLA compiles (jit_compile), XLA's dump flags (XLA_FLAGS, process-wide, see `xla_flags`):
      1: `--xla_dump_to=kernel_meta --xla_dump_hlo_as_text`: HLO before/after optimisation (each
         instruction's metadata names the TensorFlow op and Python source line: the source
         mapping), LLVM IR before/after optimisation, buffer assignment.
      2: as 1 with `--xla_backend_optimization_level=0` and
         `--xla_llvm_disable_expensive_passes=true` (compiler optimisation off).
      3: `--xla_dump_to=kernel_meta --xla_dump_hlo_as_proto`: the compiled modules only (binary
         HLO protos after optimisation, the generated code's IR); optimisation stays on.
      4: as 3 plus `--xla_dump_hlo_as_text --xla_dump_fusion_visualization`: the fusion
         decisions, readable (the Ascend level's "fusion descriptions").
  - For every level >= 1 the TensorFlow graphs are dumped too (the whole story when XLA does not
    compile, the non-XLA part when it does), named `<mode>_...`:
      1, 2: `graph.pbtxt` (as built) with `graph_loc.json` (op name -> Python file:line, the
            source mapping) and, after the first run, `partition_<i>.pbtxt` (the graphs the
            executor really ran, after grappler);
      2 also sets the classic graph optimiser to L0 (no common-subexpression elimination or
            constant folding outside grappler);
      3: the executed `partition_<i>.pbtxt` only;
      4: as 3 plus `fusions.json`: every fused kernel in the executed graphs (_Fused* ops, with
            oneDNN on _MklNativeFused*/_MklFused*, and their fused_ops).
  - Level 0 writes nothing.
  - A kernel_meta folder or file that is a symbolic link is refused (`safe_files.PlantedLinkError`
    naming it); files are written to a private temporary name and renamed into place.
"""
from __future__ import annotations

import json
import os

from .. import safe_files
from . import xla_flags
from .plan import Options, SessionPlan

KERNEL_META = "kernel_meta"

XLA_DUMP_FLAGS = {
    1: ("--xla_dump_hlo_as_text",),
    2: ("--xla_dump_hlo_as_text", "--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true"),
    3: ("--xla_dump_hlo_as_proto",),
    4: ("--xla_dump_hlo_as_proto", "--xla_dump_hlo_as_text", "--xla_dump_fusion_visualization"),
}


def kernel_meta_dir(options: Options) -> str:
    """Absolute `<debug_dir or cwd>/kernel_meta`."""
    return os.path.abspath(os.path.join(options.get("debug_dir") or os.getcwd(), KERNEL_META))


def _write(path: str, text: str) -> None:
    safe_files.write_text(path, text, "kernel_meta file")


def _make_folder(folder: str) -> None:
    safe_files.make_dir(folder, "kernel_meta folder")


def graph_dumper(folder: str, level: int):
    """A graph transform writing the built graph (and its source mapping) for levels 1 and 2."""

    def dump(graph, mode: str) -> None:
        if level not in (1, 2):
            return
        _make_folder(folder)
        _write(os.path.join(folder, f"{mode}_graph.pbtxt"), str(graph.as_graph_def()))
        locations = {}
        for op in graph.get_operations():
            frame = _user_frame(op.traceback)
            if frame is not None:
                locations[op.name] = f"{frame[0]}:{frame[1]}"
        _write(os.path.join(folder, f"{mode}_graph_loc.json"), json.dumps(locations, indent=1, sort_keys=True))

    return dump


def _library_dirs() -> tuple:
    """The installed folders of TensorFlow, Keras and npurun itself: frames there are not the user's.
    Found from the modules, not from path spellings ("/npurun/" would also match a checkout's own
    folder, hiding the user's lines)."""
    import sys

    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # the npurun package
    for name in ("tensorflow", "keras", "tf_keras", "tensorflow_estimator"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(module.__file__)))
    return tuple(d + os.sep for d in dirs)


def _user_frame(traceback):
    """The innermost frame outside TensorFlow, Keras and npurun: where the user built the op."""
    library = _library_dirs()
    for frame in reversed(list(traceback or ())):
        filename, lineno = frame[0], frame[1]
        if not os.path.abspath(filename).startswith(library):
            return filename, lineno
    return None


def fused_kernels(partition_graphs) -> list:
    """[{"name", "op", "fused_ops", "device"}] for every fused op of the executed graphs."""
    fused = []
    for graph_def in partition_graphs:
        for node in graph_def.node:
            if node.op.startswith("_Fused") or node.op.startswith("_MklFused") or "fused_ops" in node.attr:
                ops = [op.decode() for op in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
                fused.append({"name": node.name, "op": node.op, "fused_ops": ops, "device": node.device})
    return fused


def partition_hook(folder: str, level: int, mode: str):
    """A SessionRunHook writing the executed partition graphs of the first run (levels 1-4)."""
    import tensorflow as tf

    class PartitionGraphDump(tf.compat.v1.train.SessionRunHook):
        """Asks the first Session.run for its partition graphs and writes them to kernel_meta."""

        def __init__(self):
            self._done = False

        def before_run(self, run_context):
            if self._done:
                return None
            return tf.compat.v1.train.SessionRunArgs(
                fetches=None, options=tf.compat.v1.RunOptions(output_partition_graphs=True))

        def after_run(self, run_context, run_values):
            if self._done or run_values.run_metadata is None:
                return
            graphs = list(run_values.run_metadata.partition_graphs)
            if not graphs:
                return
            self._done = True
            _make_folder(folder)
            for i, graph_def in enumerate(graphs):
                _write(os.path.join(folder, f"{mode}_partition_{i}.pbtxt"), str(graph_def))
            if level == 4:
                _write(os.path.join(folder, f"{mode}_fusions.json"),
                       json.dumps(fused_kernels(graphs), indent=1))

    return PartitionGraphDump()


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    level = options.get("op_debug_level", 0)
    if not level:
        return
    from .compilation import resolve_jit

    folder = kernel_meta_dir(options)
    _make_folder(folder)
    if resolve_jit(options).compiles:
        xla_flags.request(plan, xla_flags.XLA_FLAGS, "--xla_dump_to=" + folder, *XLA_DUMP_FLAGS[level])
    if level == 2:
        import tensorflow as tf

        plan.config_proto.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    plan.graph_transforms.append(graph_dumper(folder, level))
    plan.hooks.append(partition_hook(folder, level, mode))
