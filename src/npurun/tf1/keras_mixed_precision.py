"""`tf.keras.mixed_precision.experimental`: Keras 2.1-2.3's mixed precision API (TensorFlow 1.14 to 2.3; TF 2.4 still
had it, deprecated), which TensorFlow 2.x-era scripts use and tf-keras no longer has.

Official models' `performance.py` / `resnet_runnable.py`, vendored into 7 TensorFlow2 ModelZoo folders, call
`experimental.set_policy('float32')`, `experimental.Policy('mixed_float16', loss_scale=...)` and
`experimental.LossScaleOptimizer(optimizer, loss_scale)`. Each name is tf-keras's present one:
- `set_policy` is `set_global_policy`, `global_policy` is `global_policy`;
- `Policy(name, loss_scale='auto')` is tf-keras's Policy of that name; `loss_scale` is kept as its
  `loss_scale` attribute. tf-keras's `Model.compile` wraps the optimizer of a `mixed_float16` model in a dynamic
  LossScaleOptimizer, which is what 'auto' and 'dynamic' asked for; any other loss_scale is refused (ValueError)
  rather than ignored;
- `LossScaleOptimizer(optimizer, loss_scale='dynamic')` is tf-keras's LossScaleOptimizer with that loss scale
  ('dynamic', a number for a fixed scale, or a tf.compat.v1.mixed_precision FixedLossScale / DynamicLossScale),
  converted as tf-keras converts TF 1's loss scales; `isinstance(x, LossScaleOptimizer)` is tf-keras's check.
"""
from __future__ import annotations

import types

_POLICY_LOSS_SCALES = ("auto", "dynamic", None)


def module():
    """The `experimental` namespace (a new module each call: the world attaches one and takes it away again)."""
    from tf_keras.src.mixed_precision import loss_scale_optimizer as lso
    from tf_keras.src.mixed_precision import policy as policies

    class Policy(policies.Policy):
        """tf-keras's Policy, with Keras 2.1-2.3's `loss_scale` argument and attribute."""

        def __init__(self, name, loss_scale="auto"):
            if loss_scale not in _POLICY_LOSS_SCALES:
                raise ValueError(
                    f"tf.keras.mixed_precision.experimental.Policy({name!r}, loss_scale={loss_scale!r}): npurun "
                    f"gives this Keras 2.1-2.3 API with loss_scale 'auto', 'dynamic' or None only (tf-keras's "
                    f"compile() scales a mixed_float16 model's loss dynamically); pass a fixed loss scale to "
                    f"experimental.LossScaleOptimizer(optimizer, loss_scale) instead")
            super().__init__(name)
            self.loss_scale = loss_scale

    class _LossScaleOptimizerType(type):
        def __instancecheck__(cls, instance):
            return isinstance(instance, lso.BaseLossScaleOptimizer)

    class LossScaleOptimizer(metaclass=_LossScaleOptimizerType):
        """Keras 2.1-2.3's `LossScaleOptimizer(optimizer, loss_scale)`: tf-keras's, with that loss scale."""

        def __new__(cls, optimizer, loss_scale="dynamic"):
            return lso._create_loss_scale_optimizer_from_v1_loss_scale(optimizer, loss_scale)  # noqa: SLF001

    namespace = types.ModuleType("tf_keras.mixed_precision.experimental", __doc__)
    namespace.Policy = Policy
    namespace.LossScaleOptimizer = LossScaleOptimizer
    namespace.set_policy = policies.set_global_policy
    namespace.global_policy = policies.global_policy
    return namespace
