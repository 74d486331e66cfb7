"""Start this rank's TensorFlow server as npurun does (`cluster.ensure_server`) and keep it up until
stdin closes; prints `listening PORT` once it serves. The cluster comes from TF_CONFIG."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from npurun.distribute import cluster  # noqa: E402

layout = cluster.read_layout()
cluster.ensure_server(layout=layout)
print("listening", layout.address.rsplit(":", 1)[1], flush=True)
sys.stdin.read()
