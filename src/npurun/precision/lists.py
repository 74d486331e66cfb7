"""The mixed-precision op lists: TensorFlow 2.21's defaults and the edits npurun makes to them.

TensorFlow's grappler auto mixed precision paints ops from four lists: allow (always lowered),
deny (kept float32, and float32-ness spreads through infer/clear ops), infer (lowered between
lowered ops) and clear (follows its neighbours). Ascend's lists map onto them:
white-list = allow, black-list = deny, gray-list = infer.

Rules for building a session's lists (later rules win):

1. `drop`: ops that cannot be lowered on the device (no kernel for the low dtype) leave the allow
   list.
2. `widen_allow` (force_fp16): every listed op goes to the allow list.
3. modify_mixlist `to-remove`: an op on that default list moves to gray (infer), as the product
   document says ("黑名单算子转换为灰名单算子"); a gray-list `to-remove` takes the op off every list
   (TensorFlow then keeps it float32, without spreading). An op not on that list: warning, no change.
4. modify_mixlist `to-add`: the op goes to that list (and leaves the others). Adding one TensorFlow
   op to two lists (e.g. `Matmul` black, `MatMul` white) is a ValueError. A white-list addition
   that cannot be lowered on the device is dropped with a warning.
5. `high_precision` op types go to the deny list, over any white-list addition (with a warning).

TensorFlow reads the edits from environment variables
`TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{ALLOWLIST,DENYLIST,INFERLIST,CLEARLIST}_{ADD,REMOVE}`
(comma lists; the same variables apply to the fp16 and the oneDNN bf16 pass) each time the pass
runs, i.e. while the session optimises its graph. `ListPlan.environment()` sets all of them, and
empties the older WHITELIST/GRAYLIST/BLACKLIST names, so a session's lists are exactly the
defaults plus its own edits; `SessionPlan.environment()` restores the previous values afterwards.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from . import op_names

LISTS = ("allow", "deny", "infer", "clear")
ASCEND_LISTS = {"white-list": "allow", "black-list": "deny", "gray-list": "infer"}
ENV_PREFIX = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"
_ENV_LIST = {"allow": "ALLOWLIST", "deny": "DENYLIST", "infer": "INFERLIST", "clear": "CLEARLIST"}
_LEGACY_ENV_LISTS = ("WHITELIST", "GRAYLIST", "BLACKLIST")  # still read by TensorFlow 2.21

# TensorFlow 2.21's default lists, as its pass reports them (TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH
# "paintbuckets" files): float16 = AutoMixedPrecisionListsFp16 (the GPU pass and auto_mixed_precision_cpu),
# bfloat16 = AutoMixedPrecisionListsMkl (auto_mixed_precision_onednn_bfloat16).
# tests/precision/test_lists.py compares them with a fresh dump.
DEFAULT_LISTS: dict[tuple[str, str], frozenset] = {
    ("float16", "allow"): frozenset({
        'BatchMatMul', 'BatchMatMulV2', 'BlockLSTM', 'BlockLSTMGrad', 'BlockLSTMGradV2', 'BlockLSTMV2',
        'Conv2D', 'Conv2DBackpropFilter', 'Conv2DBackpropInput', 'Conv3D', 'Conv3DBackpropFilter',
        'Conv3DBackpropFilterV2', 'Conv3DBackpropInput', 'Conv3DBackpropInputV2', 'CudnnRNN',
        'CudnnRNNBackprop', 'CudnnRNNBackpropV2', 'CudnnRNNBackpropV3', 'CudnnRNNV2', 'CudnnRNNV3',
        'DepthwiseConv2dNative', 'DepthwiseConv2dNativeBackpropFilter', 'DepthwiseConv2dNativeBackpropInput',
        'Einsum', 'FastUnsortedSegmentMax', 'FusedConv2DBiasActivation', 'FusedSparseConvGpuV2',
        'GRUBlockCell', 'GRUBlockCellGrad', 'LSTMBlockCell', 'LSTMBlockCellGrad', 'MatMul', 'Mha', 'MhaV2',
        'Pmlp', 'Tmlp', 'TmlpV2', 'TmlpV3', 'VoxelMax'}),
    ("float16", "deny"): frozenset({
        'Exp', 'Expm1', 'L2Loss', 'Mean', 'Pow', 'SaveV2', 'SoftmaxCrossEntropyWithLogits',
        'SparseSoftmaxCrossEntropyWithLogits', 'Sum'}),
    ("float16", "infer"): frozenset({
        'Add', 'AddN', 'AddV2', 'AvgPool', 'AvgPool3D', 'AvgPool3DGrad', 'AvgPoolGrad', 'BiasAdd',
        'BiasAddGrad', 'BiasAddV1', 'Elu', 'EluGrad', 'Erf', 'Erfc', 'FloorDiv', 'FusedBatchNormGradV2',
        'FusedBatchNormGradV3', 'FusedBatchNormV2', 'FusedBatchNormV3', 'Inv', 'LeakyRelu', 'LeakyReluGrad',
        'Log', 'Log1p', 'LogSoftmax', 'Mul', 'Prod', 'RealDiv', 'Reciprocal', 'Selu', 'SeluGrad', 'Sigmoid',
        'SigmoidGrad', 'Softmax', 'Softplus', 'SoftplusGrad', 'Softsign', 'SoftsignGrad', 'Sqrt', 'Sub',
        'Tanh', 'TanhGrad', '_FusedBatchNormEx'}),
    ("float16", "clear"): frozenset({
        'Abs', 'ArgMax', 'ArgMin', 'BatchToSpace', 'BatchToSpaceND', 'BroadcastTo', 'Ceil', 'CheckNumerics',
        'ClipByValue', 'Concat', 'ConcatV2', 'DepthToSpace', 'DynamicPartition', 'DynamicStitch',
        'EnsureShape', 'Enter', 'Equal', 'Exit', 'ExpandDims', 'Fill', 'Floor', 'Gather', 'GatherNd',
        'GatherV2', 'Greater', 'GreaterEqual', 'Identity', 'IdentityN', 'IsFinite', 'IsInf', 'IsNan', 'Less',
        'LessEqual', 'Max', 'MaxPool', 'MaxPool3D', 'MaxPool3DGrad', 'MaxPool3DGradGrad', 'MaxPoolGrad',
        'MaxPoolGradGrad', 'MaxPoolGradGradV2', 'MaxPoolGradV2', 'MaxPoolV2', 'Maximum', 'Merge', 'Min',
        'Minimum', 'MirrorPad', 'MirrorPadGrad', 'Neg', 'NextIteration', 'NotEqual', 'OneHot', 'OnesLike',
        'Pack', 'Pad', 'PadV2', 'PreventGradient', 'Rank', 'Relu', 'Relu6', 'Relu6Grad', 'ReluGrad',
        'Reshape', 'ResizeNearestNeighbor', 'ResizeNearestNeighborGrad', 'Reverse', 'ReverseSequence',
        'ReverseV2', 'Round', 'Select', 'SelectV2', 'Shape', 'ShapeN', 'Sign', 'Size', 'Slice', 'Snapshot',
        'SpaceToBatch', 'SpaceToBatchND', 'SpaceToDepth', 'Split', 'SplitV', 'Squeeze', 'StopGradient',
        'StridedSlice', 'StridedSliceGrad', 'Switch', 'TensorListConcat', 'TensorListConcatLists',
        'TensorListConcatV2', 'TensorListFromTensor', 'TensorListGather', 'TensorListGetItem',
        'TensorListPopBack', 'TensorListPushBack', 'TensorListPushBackBatch', 'TensorListScatter',
        'TensorListScatterIntoExistingList', 'TensorListScatterV2', 'TensorListSetItem', 'TensorListSplit',
        'TensorListStack', 'Tile', 'TopK', 'TopKV2', 'Transpose', 'Unpack', 'Where', 'ZerosLike'}),
    ("bfloat16", "allow"): frozenset({
        'BatchMatMul', 'BatchMatMulV2', 'Conv2D', 'Conv2DBackpropFilter', 'Conv2DBackpropInput', 'Conv3D',
        'Conv3DBackpropFilterV2', 'Conv3DBackpropInputV2', 'DepthwiseConv2dNative',
        'DepthwiseConv2dNativeBackpropFilter', 'DepthwiseConv2dNativeBackpropInput', 'Einsum',
        'FusedPadConv2D', 'MatMul'}),
    ("bfloat16", "deny"): frozenset({
        'Exp', 'Expm1', 'L2Loss', 'Pow', 'SaveV2', 'SoftmaxCrossEntropyWithLogits',
        'SparseSoftmaxCrossEntropyWithLogits'}),
    ("bfloat16", "infer"): frozenset({
        'Add', 'AddN', 'AddV2', 'AvgPool', 'AvgPool3D', 'AvgPool3DGrad', 'AvgPoolGrad', 'BiasAdd',
        'BiasAddGrad', 'BiasAddV1', 'Elu', 'EluGrad', 'Erf', 'Erfc', 'FloorDiv', 'FusedBatchNormGradV2',
        'FusedBatchNormGradV3', 'FusedBatchNormV2', 'FusedBatchNormV3', 'Inv', 'LeakyRelu', 'LeakyReluGrad',
        'Log', 'Log1p', 'LogSoftmax', 'Mean', 'Mul', 'Prod', 'RealDiv', 'Reciprocal', 'Rsqrt', 'Selu',
        'SeluGrad', 'Sigmoid', 'SigmoidGrad', 'Softmax', 'Softplus', 'SoftplusGrad', 'Softsign',
        'SoftsignGrad', 'Sqrt', 'Square', 'SquaredDifference', 'Sub', 'Sum', 'Tanh', 'TanhGrad',
        '_FusedBatchNormEx'}),
    ("bfloat16", "clear"): frozenset({
        'Abs', 'ArgMax', 'ArgMin', 'BatchToSpace', 'BatchToSpaceND', 'BroadcastTo', 'Ceil', 'CheckNumerics',
        'ClipByValue', 'Concat', 'ConcatV2', 'DepthToSpace', 'DynamicPartition', 'DynamicStitch',
        'EnsureShape', 'Enter', 'Equal', 'Exit', 'ExpandDims', 'Fill', 'Floor', 'Gather', 'GatherNd',
        'GatherV2', 'Greater', 'GreaterEqual', 'Identity', 'IdentityN', 'IsFinite', 'IsInf', 'IsNan', 'Less',
        'LessEqual', 'Max', 'MaxPool', 'MaxPool3D', 'MaxPool3DGrad', 'MaxPoolGrad', 'MaxPoolGradGrad',
        'MaxPoolGradGradV2', 'MaxPoolGradV2', 'MaxPoolV2', 'Maximum', 'Merge', 'Min', 'Minimum', 'MirrorPad',
        'MirrorPadGrad', 'Neg', 'NextIteration', 'NotEqual', 'OnesLike', 'Pack', 'Pad', 'PadV2',
        'PreventGradient', 'Rank', 'Relu', 'Relu6', 'Relu6Grad', 'ReluGrad', 'Reshape', 'ResizeBilinear',
        'ResizeNearestNeighbor', 'ResizeNearestNeighborGrad', 'Reverse', 'ReverseSequence', 'ReverseV2',
        'Round', 'ScatterNd', 'Select', 'SelectV2', 'Shape', 'ShapeN', 'Sign', 'Slice', 'Snapshot',
        'SpaceToBatch', 'SpaceToBatchND', 'SpaceToDepth', 'Split', 'SplitV', 'Squeeze', 'StatelessWhile',
        'StopGradient', 'StridedSlice', 'StridedSliceGrad', 'Switch', 'TensorListConcat',
        'TensorListConcatLists', 'TensorListConcatV2', 'TensorListFromTensor', 'TensorListGather',
        'TensorListGetItem', 'TensorListPopBack', 'TensorListPushBack', 'TensorListPushBackBatch',
        'TensorListScatter', 'TensorListScatterIntoExistingList', 'TensorListScatterV2', 'TensorListSetItem',
        'TensorListSplit', 'TensorListStack', 'Tile', 'TopK', 'TopKV2', 'Transpose', 'Unpack', 'Where',
        'While', 'ZerosLike'}),}


def default_list(dtype: str, name: str) -> frozenset:
    """TensorFlow's default `name` list ("allow", "deny", "infer", "clear") for "float16" or "bfloat16"."""
    return DEFAULT_LISTS[(dtype, name)]


@dataclass
class ListPlan:
    """Where each edited op ends up: op type -> "allow", "deny", "infer", "clear" or None (no list)."""

    dtype: str
    moves: dict = field(default_factory=dict)

    def environment(self) -> dict:
        """The TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_* variables for these moves (all of them set)."""
        env = {}
        for name in LISTS:
            added = sorted(op for op, target in self.moves.items() if target == name)
            removed = sorted(op for op, target in self.moves.items() if target != name)
            env[f"{ENV_PREFIX}{_ENV_LIST[name]}_ADD"] = ",".join(added)
            env[f"{ENV_PREFIX}{_ENV_LIST[name]}_REMOVE"] = ",".join(removed)
        for legacy in _LEGACY_ENV_LISTS:
            env[f"{ENV_PREFIX}{legacy}_ADD"] = ""
            env[f"{ENV_PREFIX}{legacy}_REMOVE"] = ""
        return env

    def effective(self, name: str) -> frozenset:
        """The `name` list TensorFlow will use: the default one with these moves applied."""
        base = {op for op in default_list(self.dtype, name) if self.moves.get(op, name) == name}
        return frozenset(base | {op for op, target in self.moves.items() if target == name})


def plan_lists(dtype: str, edits=None, high_precision: Iterable[str] = (), *, widen_allow: Iterable[str] = (),
               drop: Iterable[str] = (), lowerable: Optional[Callable[[str], bool]] = None) -> ListPlan:
    """The list edits for one session (see the module rules).

    Args:
      dtype: "float16" or "bfloat16" (which default lists the edits start from).
      edits: a parsed modify_mixlist file (`MixListEdits`, Ascend op names) or None.
      high_precision: TensorFlow op types that must stay float32.
      widen_allow: TensorFlow op types to put on the allow list (force_fp16).
      drop: TensorFlow op types to take off the allow list (no low-precision kernel here).
      lowerable: op type -> whether it has a kernel for `dtype` on the device (None: assume yes).
    """
    plan = ListPlan(dtype)
    moves = plan.moves
    for op in drop:
        if op in default_list(dtype, "allow"):
            moves[op] = None
    for op in widen_allow:
        moves[op] = "allow"
    if edits is not None:
        for ascend_list, name in ASCEND_LISTS.items():
            where = f"modify_mixlist {ascend_list} to-remove"
            for op in op_names.translate(edits.get(ascend_list, "to-remove"), where):
                if op in default_list(dtype, name):
                    moves[op] = "infer" if name != "infer" else None
                else:
                    warnings.warn(f"npurun precision: {where}: {op!r} is not on TensorFlow's {dtype} {name} list "
                                  f"({ascend_list}); nothing to remove", UserWarning, stacklevel=2)
        added: dict[str, str] = {}
        for ascend_list, name in ASCEND_LISTS.items():
            where = f"modify_mixlist {ascend_list} to-add"
            for op in op_names.translate(edits.get(ascend_list, "to-add"), where):
                if op in added and added[op] != ascend_list:
                    raise ValueError(f"modify_mixlist: TensorFlow op {op!r} is added to both {added[op]} and "
                                     f"{ascend_list} (after translating Ascend names); an op is on one list")
                added[op] = ascend_list
                if name == "allow" and lowerable is not None and not lowerable(op):
                    warnings.warn(f"npurun precision: {where}: {op!r} has no {dtype} kernel on this device, so it "
                                  f"cannot be lowered; left on its list", UserWarning, stacklevel=2)
                    continue
                moves[op] = name
    for op in high_precision:
        if moves.get(op) == "allow" and op not in set(widen_allow):
            warnings.warn(f"npurun precision: {op!r} is high_precision and also added to the white-list; "
                          f"high_precision wins (it stays float32)", UserWarning, stacklevel=2)
        moves[op] = "deny"
    return plan
