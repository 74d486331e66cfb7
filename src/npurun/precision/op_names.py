"""Ascend op names -> TensorFlow op type names, for the mixed-precision lists and per-op precision.

Rules:

- A name that is a registered TensorFlow op type is used as it is (TensorFlow's own names win:
  `Conv2D`, `MatMul`, `Cast` mean those ops).
- Otherwise the Ascend spelling is looked up in `ASCEND_TO_TF` (one Ascend op may stand for several
  TensorFlow ops: `Pooling` is both `MaxPool` and `AvgPool`).
- A name that is neither gives one UserWarning naming it and where it came from; it is kept as
  given (it matches no op of a TensorFlow graph, so it changes nothing, but a custom op registered
  later under that name would still match).

The table is published in docs/precision.md; `tests/precision/test_op_names.py` checks that every
TensorFlow name in it is a registered op type.
"""
from __future__ import annotations

import warnings
from typing import Iterable

from tensorflow.python.framework import op_def_registry

# Ascend (CANN / TBE) op type -> TensorFlow op types. Only names that differ from TensorFlow's.
ASCEND_TO_TF: dict[str, tuple[str, ...]] = {
    # matrix multiplication
    "Matmul": ("MatMul",),
    "MatMulV2": ("MatMul",),
    "MatMulV3": ("MatMul",),
    "FullyConnection": ("MatMul",),
    # convolution
    "Conv2DBackpropInputD": ("Conv2DBackpropInput",),
    "Conv2DBackpropFilterD": ("Conv2DBackpropFilter",),
    "Conv3DBackpropInputD": ("Conv3DBackpropInputV2",),
    "Conv3DBackpropFilterD": ("Conv3DBackpropFilterV2",),
    "DepthwiseConv2D": ("DepthwiseConv2dNative",),
    "DepthwiseConv2DBackpropInputD": ("DepthwiseConv2dNativeBackpropInput",),
    "DepthwiseConv2DBackpropFilterD": ("DepthwiseConv2dNativeBackpropFilter",),
    # bias
    "Bias": ("BiasAdd",),
    # softmax
    "SoftmaxV2": ("Softmax",),
    "LogSoftmaxV2": ("LogSoftmax",),
    "SoftmaxCrossEntropyWithLogitsD": ("SoftmaxCrossEntropyWithLogits",),
    # pooling
    "Pooling": ("MaxPool", "AvgPool"),
    "AvgPoolV2": ("AvgPool",),
    "AvgPoolGradD": ("AvgPoolGrad",),
    "MaxPoolV3": ("MaxPool",),
    "MaxPoolGradV3": ("MaxPoolGrad",),
    # reductions (the `D` variants take their axes as attributes on Ascend)
    "ReduceMeanD": ("Mean",),
    "ReduceMean": ("Mean",),
    "ReduceSumD": ("Sum",),
    "ReduceSum": ("Sum",),
    "ReduceMaxD": ("Max",),
    "ReduceMax": ("Max",),
    "ReduceMinD": ("Min",),
    "ReduceMin": ("Min",),
    "ReduceProdD": ("Prod",),
    "ReduceProd": ("Prod",),
    # batch norm (Ascend splits it into reduce/update ops)
    "BNTrainingReduce": ("FusedBatchNormV3",),
    "BNTrainingUpdate": ("FusedBatchNormV3",),
    "BNInfer": ("FusedBatchNormV3",),
    "BNTrainingReduceGrad": ("FusedBatchNormGradV3",),
    "BNTrainingUpdateGrad": ("FusedBatchNormGradV3",),
    # activations
    "ReluV2": ("Relu",),
    "ReluGradV2": ("ReluGrad",),
    # data movement with attribute forms
    "ConcatD": ("ConcatV2",),
    "ConcatV2D": ("ConcatV2",),
    "SplitD": ("Split",),
    "SplitVD": ("SplitV",),
    "TransposeD": ("Transpose",),
    "PadD": ("Pad",),
    "TileD": ("Tile",),
    "StridedSliceD": ("StridedSlice",),
    "GatherV2D": ("GatherV2",),
    "ArgMaxD": ("ArgMax",),
    "OneHotD": ("OneHot",),
    "SquareSumV1": ("Sum",),
}


def is_tf_op(name: str) -> bool:
    """Whether `name` is a registered TensorFlow op type."""
    return op_def_registry.get(name) is not None


def translate(names: Iterable[str], where: str) -> tuple[str, ...]:
    """TensorFlow op types for `names` (order kept, no repeats); warns for unknown names.

    `where` names the source in the warning, e.g. "modify_mixlist black-list to-add".
    """
    result: list[str] = []
    for name in names:
        if is_tf_op(name):
            targets: tuple[str, ...] = (name,)
        elif name in ASCEND_TO_TF:
            targets = ASCEND_TO_TF[name]
        else:
            warnings.warn(f"npurun precision: op name {name!r} in {where} is neither a TensorFlow op type nor "
                          f"a known Ascend op name (see docs/precision.md); it matches no op here", UserWarning,
                          stacklevel=2)
            targets = (name,)
        result.extend(t for t in targets if t not in result)
    return tuple(result)
