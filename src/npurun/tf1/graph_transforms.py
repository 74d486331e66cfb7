"""`tensorflow.tools.graph_transforms` at its TensorFlow 1.15 path, for the import only.

TensorFlow 1.15's pip package shipped the Graph Transform Tool's Python wrapper (`TransformGraph`);
TensorFlow 2.21's does not. 13 ModelZoo-TensorFlow model folders import it at module level, for an export
step after training (EDSR_ID1263's quantized .pb export). The import works here so training runs;
calling `TransformGraph` is an AdapterAPIError naming what to use instead.
"""
from __future__ import annotations

from ..names.coverage import AdapterAPIError


def TransformGraph(input_graph_def, inputs, outputs, transforms):  # noqa: N802 (TF 1's name)
    raise AdapterAPIError(
        f"tensorflow.tools.graph_transforms.TransformGraph (transforms {list(transforms)!r}) is not in TensorFlow "
        f"2.21, and npurun does not provide it: strip unused nodes with "
        f"tf.compat.v1.graph_util.extract_sub_graph(graph_def, outputs), or export a SavedModel",
        name="tensorflow.tools.graph_transforms.TransformGraph")


__all__ = ["TransformGraph"]
