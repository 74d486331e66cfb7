"""`tfdeterminism` (the tensorflow-determinism package) as a TF 1 script under `npurun run` imports it.

Scripts call `from tfdeterminism import patch; patch()` (kernelNet_ID0305) for reproducible runs. The
package patched TensorFlow 1.14-2.0's GPU kernels; its last version refuses TensorFlow 2.21 ("No patch
available"). TensorFlow now has op determinism of its own, and `patch()` / `enable_determinism()` turn
that on (`tf.config.experimental.enable_op_determinism()`, for the whole process: the run is the
script's). With it on, TensorFlow asks every random op for a seed (`tf.set_random_seed(seed)`, which
scripts that want determinism set; without one TensorFlow's RuntimeError says so).
"""
from __future__ import annotations

import logging

__version__ = "0.3.0"  # the last tensorflow-determinism release, whose API this is
logger = logging.getLogger("npurun")


def enable_determinism():
    """TensorFlow's op determinism, on for the rest of the process."""
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()
    logger.info("tfdeterminism: TensorFlow's op determinism is on "
                "(tf.config.experimental.enable_op_determinism); random ops need a seed")


def patch():
    """tensorflow-determinism 0.3's `patch()`: here TensorFlow's own op determinism (`enable_determinism`)."""
    enable_determinism()
