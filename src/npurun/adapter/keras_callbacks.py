"""The adapter's Keras callbacks, for the Keras a TF1 script's `tf.keras` is under `npurun run` (tf-keras).

Under `npurun run` a script's tf.keras is tf-keras (Keras 2, with TensorFlow 1's backend session), so the
adapter's callback can do what it does on Ascend: broadcast the variables once, on the session Keras trains in.
This module is imported only when a script reads one of its names (tf-keras is imported with it).
"""
from __future__ import annotations

import os

from tf_keras.src import backend, callbacks

from ..distribute.hooks import NPUBroadcastGlobalVariablesHook


class NPUBroadcastGlobalVariablesCallback(callbacks.Callback):
    """Before the first batch, every global variable of Keras's session is set to `root_rank`'s value
    (nothing to send in a one-rank run), as the adapter's callback does."""

    def __init__(self, root_rank=0):
        super().__init__()
        # The hook checks root_rank now, so a wrong one fails where the callback is made.
        self._hook = NPUBroadcastGlobalVariablesHook(root_rank, int(os.getenv("RANK_ID", "0")))
        self.root_rank = root_rank
        self.broadcast_done = False

    def on_batch_begin(self, batch, logs=None):
        # The adapter's hook point: at the first batch the model and its optimizer's slots exist.
        if self.broadcast_done:
            return
        session = backend.get_session()
        with session.graph.as_default():
            self._hook.begin()
        self._hook.after_create_session(session, None)
        self.broadcast_done = True


def npu_callbacks_append(callbacks_list=None):
    """`callbacks_list` (a new list if it is not one) with NPUBroadcastGlobalVariablesCallback(0) appended."""
    if not isinstance(callbacks_list, list):
        callbacks_list = []
    callbacks_list.append(NPUBroadcastGlobalVariablesCallback(0))
    return callbacks_list
