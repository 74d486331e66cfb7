"""Patterns of a third, random sample of real ModelZoo-TensorFlow scripts (seed 2026) run unmodified
under `npurun run` (docs/compat.md, "Round 3 sample (seed 2026)"); each test failed before its fix."""

import os

import pytest

from npurun import NPURunConfig
from npurun.config import DumpConfig


@pytest.fixture
def no_dump_environment(monkeypatch):
    for name in ("FLAG_ENABLE_DUMP", "DUMP_PATH", "DUMP_STEP", "DUMP_MODE"):
        monkeypatch.delenv(name, raising=False)


def test_a_dump_config_built_from_unset_environment_variables_is_accepted_with_dumping_off(
        tmp_path, no_dump_environment):
    # MobileNetV3-Small_ID1783 estimator_impl.py (and 4 more folders): every field from the environment,
    # so an ordinary run passes dump_mode=None; the adapter writes dump_mode only when it is not None.
    dump_config = DumpConfig(
        enable_dump="True" == os.getenv("FLAG_ENABLE_DUMP"),
        dump_path=os.getenv("DUMP_PATH"),
        dump_step=os.getenv("DUMP_STEP"),
        dump_mode=os.getenv("DUMP_MODE"))
    assert dump_config.enable_dump is False
    assert dump_config.dump_mode == "output"
    config = NPURunConfig(dump_config=dump_config, model_dir=str(tmp_path), iterations_per_loop=10)
    assert config.dump_config.dump_mode == "output"
    assert DumpConfig(dump_debug_mode=None).dump_debug_mode == "all"


def test_a_dump_config_still_refuses_a_wrong_dump_mode():
    with pytest.raises(ValueError, match="dump_mode"):
        DumpConfig(dump_mode="outputs")
