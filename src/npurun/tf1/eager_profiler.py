"""`tensorflow.python.eager.profiler` at its TensorFlow 1.15 / 2.0-2.3 path (gone in TensorFlow 2.21).

Official-models scripts import it at module level (`from tensorflow.python.eager import profiler`, for a
Keras callback that profiles a range of steps when asked). The functions keep their old meaning on
TensorFlow's profiler (`tf.profiler.experimental`): `start()` begins a trace, `stop()` ends it and
returns where it was written, `save(logdir, result)` puts that trace under `logdir`, and
`start_profiler_server(port)` serves traces on `port` (listening on every interface, as TensorFlow's
does; only when a script calls it).
"""
from __future__ import annotations

import os
import shutil
import tempfile

_trace_dir = None


def start(logdir=None):
    """Begin a trace (written under `logdir`, else a temporary directory until `save`)."""
    global _trace_dir
    from tensorflow.python.profiler import profiler_v2

    _trace_dir = logdir or tempfile.mkdtemp(prefix="npurun-profile-")
    profiler_v2.start(_trace_dir)


def stop():
    """End the trace; returns the directory it was written to (what `save` takes as `result`)."""
    from tensorflow.python.profiler import profiler_v2

    profiler_v2.stop()
    return _trace_dir


def save(logdir, result):
    """Put the trace `stop()` returned under `logdir`."""
    if result and os.path.realpath(result) != os.path.realpath(logdir):
        shutil.copytree(result, logdir, dirs_exist_ok=True, symlinks=True)


def start_profiler_server(port):
    from tensorflow.python.profiler import profiler_v2

    profiler_v2.start_server(port)
