"""Options that shape the session itself: device choice and blocking-op timeout."""
from __future__ import annotations

import os
import re

import tensorflow as tf

from ..config.errors import bounded_repr
from .plan import Options, SessionPlan


def resolve_device_id(options: Options) -> int | None:
    """session_device_id wins over ASCEND_DEVICE_ID; None when neither is set."""
    if options.get("session_device_id") is not None:
        return options["session_device_id"]
    raw = os.environ.get("ASCEND_DEVICE_ID", "").strip()
    if not raw:
        return None
    # ASCII digits only (str.isdigit() takes "²", which int() refuses, and "٣", which it reads as 3).
    if not re.fullmatch(r"[0-9]{1,18}", raw):
        raise ValueError(f"environment variable ASCEND_DEVICE_ID: got {bounded_repr(raw)}; allowed: an int >= 0 "
                         f"(ASCII digits)")
    return int(raw)


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    device_id = resolve_device_id(options)
    gpus = tf.config.list_physical_devices("GPU")
    if device_id is not None:
        if gpus:
            if device_id >= len(gpus):
                raise ValueError(f"NPURunConfig option 'session_device_id' (or ASCEND_DEVICE_ID): got {device_id}; "
                                 f"allowed: a GPU index in [0, {len(gpus) - 1}] on this machine")
            plan.config_proto.gpu_options.visible_device_list = str(device_id)
            plan.device = "/device:GPU:0"  # the one visible GPU, renumbered from 0
        elif device_id != 0:
            raise ValueError(f"NPURunConfig option 'session_device_id' (or ASCEND_DEVICE_ID): got {device_id}; "
                             f"allowed: 0 on this machine, which has no GPU (device 0 is the CPU)")
        else:
            plan.device = "/device:CPU:0"
    if options.get("op_wait_timeout") is not None:
        plan.config_proto.operation_timeout_in_ms = options["op_wait_timeout"] * 1000
