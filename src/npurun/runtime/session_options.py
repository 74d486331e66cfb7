"""Options that shape the session itself: device choice and blocking-op timeout.

The device id (session_device_id, else ASCEND_DEVICE_ID) picks a GPU by index. On a machine with one
device (no GPU: the CPU; or one GPU) the ids of an Ascend server's 8 devices, 0..7, all mean that device:
scripts set their own (`os.environ["ASCEND_DEVICE_ID"] = "4"`) as written for one card of a server, and
a run here is that card. An id other than 0 says so once per process (logger "npurun").
"""
from __future__ import annotations

import logging
import os
import re

from .. import logs
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


logger = logging.getLogger("npurun")
ASCEND_DEVICES = 8  # device ids 0..7 of an Ascend server
_mapped_warned = set()


def _one_device(device_id: int, device: str) -> None:
    if device_id != 0 and device_id not in _mapped_warned:
        _mapped_warned.add(device_id)
        logger.warning("device id %d (session_device_id or ASCEND_DEVICE_ID) runs on %s, the one device of this "
                       "machine: ids 0..%d all mean it here", device_id, device, ASCEND_DEVICES - 1)


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    device_id = resolve_device_id(options)
    # The plan's first device listing (TensorFlow's discovery), after compile_cache set TF_XLA_FLAGS.
    gpus = logs.list_gpus()
    if device_id is not None:
        if len(gpus) == 1 and device_id < ASCEND_DEVICES:
            _one_device(device_id, "GPU 0")
            plan.config_proto.gpu_options.visible_device_list = "0"
            plan.device = "/device:GPU:0"
        elif gpus:
            if device_id >= len(gpus):
                raise ValueError(f"NPURunConfig option 'session_device_id' (or ASCEND_DEVICE_ID): got {device_id}; "
                                 f"allowed: a GPU index in [0, {len(gpus) - 1}] on this machine")
            plan.config_proto.gpu_options.visible_device_list = str(device_id)
            plan.device = "/device:GPU:0"  # the one visible GPU, renumbered from 0
        elif device_id >= ASCEND_DEVICES:
            raise ValueError(f"NPURunConfig option 'session_device_id' (or ASCEND_DEVICE_ID): got {device_id}; "
                             f"allowed: 0..{ASCEND_DEVICES - 1} on this machine, which has no GPU (each is the "
                             f"CPU, its one device)")
        else:
            _one_device(device_id, "the CPU")
            plan.device = "/device:CPU:0"
    if options.get("op_wait_timeout") is not None:
        plan.config_proto.operation_timeout_in_ms = options["op_wait_timeout"] * 1000
