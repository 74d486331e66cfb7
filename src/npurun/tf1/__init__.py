"""TensorFlow 1.15's world for scripts written for it, on TensorFlow 2.21.

What a TF 1 script gets under `npurun run` (or `npurun.compat.activate()`): the API switch
(`world`: `import tensorflow as tf` is TF 1's API, TF 1.15's moved private paths, NumPy's and
Python's removed aliases), `contrib` (one module per `tf.contrib` package, from maintained packages
where they exist: tf-slim, tf-keras), `layers` (TF 1's `tf.layers` from tf-keras), `hparams`,
`mnist_input_data`, `data_threadpool`, and `api_names` (generated lists of TF 1.15's public names).

Imports: `npurun.names` and, lazily, the lower rooms; never the adapters, `tf_estimator` or the tools.
"""
