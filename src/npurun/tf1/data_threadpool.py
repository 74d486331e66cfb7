"""`tensorflow.python.data.experimental.ops.threadpool` (TensorFlow 1) for scripts under `npurun run`.

TensorFlow 2 removed the module; ImageNet input pipelines descended from Google's reference code
(15 imports over the public ModelZoo-TensorFlow) still do
`threadpool.override_threadpool(ds, threadpool.PrivateThreadPool(n, display_name=...))`.
TensorFlow 2 expresses the same thing as dataset options (`threading.private_threadpool_size`,
`threading.max_intra_op_parallelism`), which is what this does.
"""
from __future__ import annotations


class PrivateThreadPool:
    """A dedicated pool of `num_threads` threads for a dataset's ops (the display name is only a label)."""

    def __init__(self, num_threads, display_name=None, max_intra_op_parallelism=1):
        if int(num_threads) < 1:
            raise ValueError(f"PrivateThreadPool: num_threads must be at least 1; got {num_threads}")
        self.num_threads = int(num_threads)
        self.display_name = display_name
        self.max_intra_op_parallelism = int(max_intra_op_parallelism)


def override_threadpool(dataset, thread_pool):
    """`dataset` with its ops run on `thread_pool` (a PrivateThreadPool)."""
    import tensorflow as tf

    options = tf.data.Options()
    options.threading.private_threadpool_size = thread_pool.num_threads
    options.threading.max_intra_op_parallelism = thread_pool.max_intra_op_parallelism
    return dataset.with_options(options)
