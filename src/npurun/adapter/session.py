"""`tf.compat.v1.Session` for sess.run-mode Ascend scripts, while the compat layer is active.

Such scripts pass NPU options in the session's ConfigProto, as a custom optimizer entry:

    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
    sess = tf.Session(config=config)

TensorFlow alone would ignore that entry. Here `tf.Session(config=...)` with such an entry gives
`npurun.util.NPUSession`: the entry is read as NPURunConfig options (validated as NPURunConfig
validates them: errors for bad values, warnings for options with no effect) and the session runs
with the plan npurun builds for those options (ConfigProto without the entry, environment, graph
transforms, session hooks); `sess.npurun_config` is the NPURunConfig. `graph_run_mode=0` gives an
inference session. A config without an NpuOptimizer entry gives TensorFlow's own Session.
"""
from __future__ import annotations


class _SessionMeta(type):
    # Every TensorFlow Session (NPUSession included) is an instance of the replacement class.
    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.tensorflow_session)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, cls.tensorflow_session)


def _session_arguments(target="", graph=None, config=None):
    return target, graph, config


def session_class(base):
    """The class standing for `base` (TensorFlow's Session) as `tf.compat.v1.Session` while active."""

    class Session(base, metaclass=_SessionMeta):
        tensorflow_session = base

        def __new__(cls, *args, **kwargs):
            if cls is Session:  # not for subclasses (npurun.util.NPUSession may be one)
                target, graph, config = _session_arguments(*args, **kwargs)
                from ..config import param_map

                if config is not None and param_map.find_npu_optimizer(config) is not None:
                    from ..config import NPURunConfig
                    from ..names.coverage import Mapped, resolve

                    NPUSession = resolve(Mapped("npurun.util:NPUSession"), "tf.compat.v1.Session with an "
                                                                          "NpuOptimizer entry")
                    npurun_config = NPURunConfig(session_config=config)
                    mode = "train" if npurun_config.graph_run_mode == 1 else "infer"
                    return NPUSession(npurun_config, target=target, graph=graph, mode=mode)
                return base(*args, **kwargs)  # TensorFlow's own Session
            return super().__new__(cls)

    Session.__doc__ = __doc__
    Session.__qualname__ = base.__qualname__
    Session.__module__ = base.__module__
    return Session
