"""Fixtures of the Estimator tests: a model_dir, a config factory, and a quiet TensorFlow."""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture
def model_dir(tmp_path):
    return str(tmp_path / "model")


@pytest.fixture
def make_config():
    """NPURunConfig(**options) with quiet defaults (no logging) unless the test sets them."""
    import npurun

    def make(**options):
        options.setdefault("log_step_count_steps", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return npurun.NPURunConfig(**options)
    return make


@pytest.fixture(autouse=True)
def _single_process(monkeypatch):
    # Tests assume a single chief process unless they set a cluster themselves.
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name in ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ASCEND_DEVICE_ID", raising=False)
