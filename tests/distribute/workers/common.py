"""Shared by the worker scripts: graph mode, quiet logs, and writing this rank's results."""
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()
tf.get_logger().setLevel("ERROR")

RANK = int(os.environ.get("RANK_ID") or 0)
OUT = Path(os.environ.get("OUT", "."))


def to_json(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def write(results, name=None):
    (OUT / (name or f"rank{RANK}.json")).write_text(json.dumps(to_json(results)))
