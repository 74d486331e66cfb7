"""Fusion switches: `fusion_switch_file`, `enable_scope_fusion_passes`, `variable_format_optimize`.

Rules (the published table is `GRAPH_FUSION`, `UB_FUSION`, `SCOPE_FUSION` below, rendered in
docs/compilation.md):
  - GraphFusion entries switch TensorFlow's grappler optimizers (RewriterConfig fields). A name is
    an Ascend pass name with an equivalent in `GRAPH_FUSION`, or the grappler field name itself
    (`remapping`, `constant_folding`, ...).
  - "ALL" switches `SAFE_GRAPPLER`: the optimizers that only speed a graph up and can be turned
    off without changing results. `layout_optimizer` is not in it (variable_format_optimize owns
    it) nor are the ones that are off by default or change semantics (debug_stripper, ...).
  - A named entry beats "ALL". Several Ascend passes share one grappler optimizer (grappler has no
    per-pattern switch), so when named entries of one optimizer disagree, "off" wins (a request not
    to fuse is the one that can matter for correctness) and a UserWarning says so.
  - UBFusion entries disable XLA fusion passes (`--xla_disable_hlo_passes`) and act only when XLA
    compiles (jit_compile); otherwise they are reported as having no effect.
  - `enable_scope_fusion_passes`: each named pass with an equivalent switches its optimizer on
    (unless the fusion switch file turned that optimizer off, which wins, with a warning).
  - `variable_format_optimize=False` turns grappler's layout_optimizer off; True leaves the
    session_config's setting (on by default).
  - Every name without an equivalent here gets one UserWarning listing them; none is silently
    dropped.
"""
from __future__ import annotations

import warnings

from ..config import parsers
from .plan import Options, SessionPlan
from . import xla_flags

# Grappler optimizers that "ALL" switches: on by default, safe to turn off.
SAFE_GRAPPLER = ("remapping", "arithmetic_optimization", "constant_folding", "shape_optimization",
                 "dependency_optimization", "loop_optimization", "common_subgraph_elimination")
# Grappler fields a named GraphFusion entry may use directly (SAFE_GRAPPLER plus layout).
GRAPPLER_NAMES = SAFE_GRAPPLER + ("layout_optimizer",)

# Ascend graph fusion pass -> (grappler optimizer or None, what it does / why there is none).
GRAPH_FUSION = {
    "MatMulBiasAddFusionPass": ("remapping", "MatMul+BiasAdd(+Relu) into one kernel: grappler's remapper "
                                             "makes _FusedMatMul"),
    "ConvBatchnormFusionPass": ("remapping", "Conv2D+BatchNorm folded into the convolution: the remapper's "
                                             "Conv2D+FusedBatchNorm fusion (_FusedConv2D, inference graphs)"),
    "SoftmaxFusionPass": (None, "builds Ascend's SoftmaxV2 kernel from a decomposed softmax; grappler has no "
                                "softmax pattern"),
    "ConvToFullyConnectionFusionPass": (None, "turns a Conv2D covering its whole input into FullyConnection; "
                                              "no grappler rewrite does this"),
    "PoolingFusionPass": (None, "Ascend's Pooling kernel selection; no grappler equivalent"),
    "ConvConcatFusionPass": (None, "concat by strided writes into Ascend device memory; no equivalent"),
    "SplitConvConcatFusionPass": (None, "concat by strided writes into Ascend device memory; no equivalent"),
    "ZConcatv2dFusionPass": (None, "Ascend 5-D format concat; no equivalent"),
    "ZConcatExt2FusionPass": (None, "Ascend 5-D format concat; no equivalent"),
    "TfMergeSubFusionPass": (None, "Ascend control-flow subgraph rewrite; no equivalent"),
    "RequantFusionPass": (None, "int8 requantisation; no equivalent (no quantised training here)"),
    "NotRequantFusionPass": (None, "int8 requantisation; no equivalent (no quantised training here)"),
}

# XLA fusion passes per XLA device: what UBFusion "ALL" disables. CPU names checked on TF 2.21's
# pipeline (see docs); GPU names are those of XLA's GPU pipeline.
XLA_FUSION_PASSES = {
    "XLA_CPU_JIT": ("fusion", "multi_output_fusion"),
    "XLA_GPU_JIT": ("priority-fusion", "fusion", "fusion_merger", "multi_output_fusion",
                    "horizontal_loop_fusion", "horizontal_input_fusion"),
}
_ALL_XLA_FUSION = tuple(dict.fromkeys(p for passes in XLA_FUSION_PASSES.values() for p in passes))

# Ascend UB (unified buffer) fusion pass -> (XLA passes or None, explanation). "*" stands for the
# device's instruction-fusion passes (producer/consumer fusion of elementwise ops into a kernel).
UB_FUSION = {
    "TbeFullyconnectionElemwiseFusionPass": ("*", "MatMul + elementwise ops in one kernel: XLA's "
                                                  "instruction fusion"),
    "TbeConv2DBackpropElemwiseFusionPass": ("*", "conv backprop + elementwise in one kernel: XLA's "
                                                 "instruction fusion"),
    "TbeMultiOutputFusionPass": (("multi_output_fusion",), "one kernel with several outputs: XLA's "
                                                             "multi-output fusion"),
    "TbePool2dQuantFusionPass": (None, "pooling + int8 quantisation; no quantised kernels here"),
}

# Ascend scope fusion pass -> (grappler optimizer or None, explanation).
SCOPE_FUSION = {
    "ScopeLayerNormPass": ("remapping", "a layer-norm scope into one kernel: the remapper's LayerNorm "
                                        "fusion (oneDNN CPU builds)"),
    "ScopeInstanceNormPass": ("remapping", "an instance-norm scope into one kernel: the remapper's "
                                           "InstanceNorm fusion (oneDNN CPU builds)"),
    "ScopeDynamicRNNPass": ("implementation_selector", "an RNN scope into a fused RNN kernel: grappler's "
                                                       "implementation selector (cuDNN RNN on GPU)"),
    "ScopeBasicLSTMCellPass": ("implementation_selector", "an LSTM cell scope into a fused kernel: grappler's "
                                                          "implementation selector"),
    "ScopeClipBoxesPass": (None, "Ascend detection-box kernel; no equivalent"),
    "ScopeBatchMultiClassNMSPass": (None, "Ascend NMS kernel; no equivalent"),
    "ScopeDecodeBboxPass": (None, "Ascend detection-box kernel; no equivalent"),
    "ScopeRoiAlignPass": (None, "Ascend RoiAlign kernel; no equivalent"),
}


def read_fusion_switch(path: str | None) -> parsers.FusionSwitch:
    """The parsed fusion switch file, or an empty switch when no file is set."""
    if path is None:
        return parsers.FusionSwitch()
    with open(path, encoding="utf-8") as handle:
        return parsers.parse_fusion_switch(handle.read())


def grappler_states(switch: parsers.FusionSwitch) -> tuple[dict, list, list]:
    """GraphFusion entries -> ({optimizer: on?}, names without equivalent, disagreement notes)."""
    entries = dict(switch.graph_fusion)
    states: dict = {}
    if "ALL" in entries:
        states.update({name: entries["ALL"] for name in SAFE_GRAPPLER})
    named: dict = {}
    unknown = []
    for name, on in entries.items():
        if name == "ALL":
            continue
        target = name if name in GRAPPLER_NAMES else GRAPH_FUSION.get(name, (None, ""))[0]
        if target is None:
            unknown.append(name)
            continue
        named.setdefault(target, []).append((name, on))
    notes = []
    for target, votes in named.items():
        states[target] = all(on for _, on in votes)
        if len({on for _, on in votes}) > 1:
            notes.append(f"GraphFusion entries {', '.join(n for n, _ in votes)} all map to grappler's {target}, "
                         f"which has one switch; 'off' wins, so {target} is off")
    return states, unknown, notes


def xla_disabled_passes(switch: parsers.FusionSwitch, device_type: str) -> tuple[list, list]:
    """UBFusion entries -> (XLA passes to disable, names without equivalent)."""
    entries = dict(switch.ub_fusion)
    device_passes = XLA_FUSION_PASSES.get(device_type, XLA_FUSION_PASSES["XLA_CPU_JIT"])
    off = set(device_passes) if entries.get("ALL") is False else set()
    unknown, turned_on, turned_off = [], set(), set()
    for name, on in entries.items():
        if name == "ALL":
            continue
        if name in _ALL_XLA_FUSION:
            passes = (name,)
        else:
            target = UB_FUSION.get(name, (None, ""))[0]
            if target is None:
                unknown.append(name)
                continue
            passes = device_passes if target == "*" else target
        (turned_on if on else turned_off).update(passes)
    # Named entries beat ALL; between named entries sharing a pass, "off" wins.
    return sorted((off - turned_on) | turned_off), unknown


def _set(rewrite_options, field: str, on: bool) -> None:
    from tensorflow.core.protobuf import rewriter_config_pb2

    toggle = rewriter_config_pb2.RewriterConfig
    setattr(rewrite_options, field, toggle.ON if on else toggle.OFF)


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    """Write the grappler switches and request the XLA pass flags (see module rules)."""
    from .compilation import resolve_jit

    rewrite = plan.config_proto.graph_options.rewrite_options
    switch = read_fusion_switch(options.get("fusion_switch_file"))
    states, unknown_graph, notes = grappler_states(switch)
    if not options.get("variable_format_optimize", True):
        if states.get("layout_optimizer"):
            notes.append("fusion_switch_file turns layout_optimizer on, variable_format_optimize=False turns it "
                         "off; the fusion switch file's explicit entry wins")
        else:
            states["layout_optimizer"] = False

    scope_unknown = []
    for name in parsers.parse_comma_list(options["enable_scope_fusion_passes"]) \
            if options.get("enable_scope_fusion_passes") else ():
        target = SCOPE_FUSION.get(name, (None, ""))[0]
        if target is None:
            scope_unknown.append(name)
        elif states.get(target) is False:
            notes.append(f"enable_scope_fusion_passes names {name} ({target}), but {target} is switched off; "
                         f"it stays off")
        else:
            states[target] = True

    for field, on in states.items():
        _set(rewrite, field, on)

    jit = resolve_jit(options)
    disabled, unknown_ub = xla_disabled_passes(switch, jit.device_type)
    if switch.ub_fusion and not jit.compiles:
        notes.append("UBFusion entries switch XLA fusion passes, and XLA does not compile in this session "
                     f"(jit_compile={options.get('jit_compile', 'auto')!r}: {jit.reason}); they have no effect")
    elif disabled:
        xla_flags.request(plan, xla_flags.XLA_FLAGS, "--xla_disable_hlo_passes=" + ",".join(disabled))

    if unknown_graph or unknown_ub:
        listed = [f"GraphFusion {n}" for n in unknown_graph] + [f"UBFusion {n}" for n in unknown_ub]
        notes.append("fusion_switch_file: no equivalent on CPU/GPU for " + ", ".join(listed) +
                     " (ignored; the table is in docs/compilation.md)")
    if scope_unknown:
        notes.append("enable_scope_fusion_passes: no equivalent on CPU/GPU for " + ", ".join(scope_unknown) +
                     " (ignored; the table is in docs/compilation.md)")
    for note in notes:
        warnings.warn(f"npurun: {note}", UserWarning, stacklevel=3)
