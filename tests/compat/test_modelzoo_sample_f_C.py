"""Issue 23's third random sample (seed 2028), part C: gaps its real scripts hit, each in the style of the
script that hit it (docs/compat.md, "Third random sample (seed 2028), part C"); each test failed before its fix.
"""
import warnings

import pytest

from npurun import NPURunConfig
from npurun.config.errors import OptionValueError


# SVD_ID2019's main_point_cloud_boostPerf.py (and 19 more folders): the per-op dtype file of the Ascend graph
# engine, next to a mixed-precision mode, in a run config built from its flags.
def test_customize_dtypes_file_is_accepted_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "switch_config.txt").write_text(
        "OpType::MatMulV2:InputDtype:float16,float16,float32,OutputDtype:float32\n"
        "OpType::BatchMatMul:InputDtype:float16,float16,OutputDtype:float32\n")
    save_summary_steps, save_checkpoints_steps, log_step_count = 250, 10000, 200
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = NPURunConfig(
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            log_step_count_steps=log_step_count,
            keep_checkpoint_max=None,
            precision_mode="allow_mix_precision",
            customize_dtypes="./switch_config.txt")
    assert config.customize_dtypes == "./switch_config.txt"
    assert any("customize_dtypes" in str(w.message) and "no effect" in str(w.message) for w in caught)


def test_customize_dtypes_names_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OptionValueError, match="customize_dtypes.*no such file"):
        NPURunConfig(precision_mode="allow_mix_precision", customize_dtypes="./switch_config.txt")
