"""TensorFlow 1 API names that TensorFlow 2.21 with Keras 3 lost and scripts use: what each is here."""
from __future__ import annotations

from ..names.coverage import AdapterModule, Mapped

TF_LAYERS = {name: Mapped(f"npurun.tf1.layers:{name}") for name in (
    "dense", "conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose", "separable_conv1d",
    "separable_conv2d", "max_pooling1d", "max_pooling2d", "max_pooling3d", "average_pooling1d",
    "average_pooling2d", "average_pooling3d", "dropout", "flatten", "batch_normalization", "Layer", "Dense",
    "Conv2D", "MaxPooling2D", "AveragePooling2D", "Dropout", "Flatten", "BatchNormalization",
    # the rest of TF 1.15's tf.layers classes (InputSpec: the CondConv layers of SpineNet's and 3 more folders)
    "InputSpec", "Conv1D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "SeparableConv1D", "SeparableConv2D",
    "MaxPooling1D", "MaxPooling3D", "AveragePooling1D", "AveragePooling3D")}

LAYERS_NAMESPACE = AdapterModule(
    "tensorflow.compat.v1.layers", "`tf.compat.v1.layers` (`tf.layers` in scripts): Keras 3 removed it. "
    "TensorFlow 1's own layers from the maintained `tf-keras` package (`tf_keras.src.legacy_tf_layers`): "
    "TF 1.x's variable names, reuse, collections and defaults.", TF_LAYERS)
