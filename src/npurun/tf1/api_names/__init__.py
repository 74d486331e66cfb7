"""Generated data: the names of TensorFlow's public API (`tf.X`, `tf.compat.v1.X`), for `npurun check`.

`generated.py` is written by `generate.py` beside it (`python -m npurun.tf1.api_names.generate`
after upgrading TensorFlow); do not edit it by hand. `npurun check` is static and imports no
TensorFlow, so it reads these lists to tell a real TensorFlow name from one that will raise.
"""
