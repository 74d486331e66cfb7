"""Runtime tests build TensorFlow graphs in graph mode, as the Estimator does."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # helpers.py


@pytest.fixture(autouse=True, scope="session")
def _graph_mode():
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    yield
