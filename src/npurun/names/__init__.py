"""Publishing npurun under other packages' names: the coverage-table types and how entries resolve.

The bottom layer of the compatibility rooms (`npurun.adapter`, `npurun.tf1`, `npurun.tf_estimator`):
plain Python, no TensorFlow, and it imports nothing of npurun. See `coverage`.
"""
