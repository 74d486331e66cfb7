"""`tensorflow.contrib.tpu.python.tpu.async_checkpoint` of TensorFlow 1.15, which EfficientNet's TPU-derived
`main.py` / `main_npu.py` import at module level (10 ModelZoo files, EfficientNet_B0_ID0009 and
EfficientNet-B4_ID0162) and use under `--use_async_checkpointing`.

TF 1.15's AsyncCheckpointSaverHook is a CheckpointSaverHook that writes in a background thread; the
checkpoints are the same. Here it saves synchronously (TensorFlow 2.21 has no async saver hook for graph
sessions): same arguments, same files, only the training step waits for the write.
"""
import tensorflow as tf


class AsyncCheckpointSaverHook(tf.compat.v1.train.CheckpointSaverHook):
    """TF 1.15's AsyncCheckpointSaverHook(checkpoint_dir, save_secs, save_steps, saver, checkpoint_basename,
    scaffold, listeners), saving in the training thread."""
