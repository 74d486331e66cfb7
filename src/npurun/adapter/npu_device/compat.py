"""`npu_device.compat.enable_v1()`: TensorFlow 1 behaviour for the rest of the process, as the adapter.

The adapter calls `tf.compat.v1.disable_v2_behavior()` (graph mode, v1 control flow, ...) and loads
its TF1 kernels; here the first part is done the same way, and what its TF1 package offers
(`npu_device.compat.v1.npu_init`, the npu_bridge names) comes from npurun's compatibility layer,
which is active already. The script keeps the `tensorflow` module it imported: with v2 behaviour
off, `tf.compat.v1` is TensorFlow 1's API, as on Ascend.
"""
from __future__ import annotations


def enable_v1() -> None:
    import tensorflow as tf
    from tensorflow.python.util import deprecation

    with deprecation.silence():
        tf.compat.v1.disable_v2_behavior()


class SessionConfigBuilder:
    """`npu_device.compat.v1.SessionConfigBuilder`: a ConfigProto with an NpuOptimizer entry, as the adapter's
    (soft placement on unless a config is given); NPURunConfig and tf.compat.v1.Session under `npurun run`
    read its parameter_map as NPURunConfig options."""

    def __init__(self, config=None):
        import tensorflow as tf
        from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

        if isinstance(config, tf.compat.v1.ConfigProto):
            self._session_config = config
        else:
            self._session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
        self._session_config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
        self._npu_config = self._session_config.graph_options.rewrite_options.custom_optimizers.add()
        self._npu_config.name = "NpuOptimizer"

    @property
    def parameter_map(self):
        return self._npu_config.parameter_map

    @property
    def session_config(self):
        return self._session_config
