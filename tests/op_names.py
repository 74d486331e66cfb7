"""TensorFlow op type names as executed with oneDNN on or off.

With oneDNN on, TensorFlow's graph rewrite renames the kernels it runs (MatMul -> _MklMatMul,
grappler's _FusedMatMul -> _MklNativeFusedMatMul, Conv2D -> _MklNativeConv2D, ...). Tests that look
at executed op types name both through these sets and `generic`.
"""
from __future__ import annotations

FUSED_MATMUL = frozenset({"_FusedMatMul", "_MklFusedMatMul", "_MklNativeFusedMatMul"})
PLAIN_MATMUL = frozenset({"MatMul", "_MklMatMul", "_MklNativeMatMul"})
MATMUL = FUSED_MATMUL | PLAIN_MATMUL
CONV2D = frozenset({"Conv2D", "_MklConv2D", "_MklNativeConv2D", "_FusedConv2D", "_MklFusedConv2D",
                    "_MklNativeFusedConv2D"})


def generic(op: str) -> str:
    """The generic TensorFlow name of an executed op: _MklNativeFusedMatMul -> _FusedMatMul,
    _MklMatMul -> MatMul, _MklNativeConv2D -> Conv2D; other names unchanged."""
    for prefix in ("_MklNative", "_Mkl"):
        if op.startswith(prefix):
            rest = op[len(prefix):]
            return "_" + rest if rest.startswith("Fused") else rest
    return op


def generic_set(ops) -> set:
    return {generic(op) for op in ops}
