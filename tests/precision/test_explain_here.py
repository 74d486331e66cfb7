"""`npurun explain` says what precision_mode does on this machine (the policy, without TensorFlow)."""
import json

import pytest

from npurun.cli import main


def precision_row(capsys, *args):
    assert main(["explain", "--format", "json", *args]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out) if r["option"] == "precision_mode"]
    return row["mechanism"]


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")


def test_featureless_cpu_says_float32_and_how_to_force(capsys, cpu_features, no_gpu):
    here = precision_row(capsys, "--set", "precision_mode=allow_mix_precision")
    assert "here: float32, this CPU has no AVX512-FP16 or AMX-FP16" in here
    assert "real float16 numerics with NPURUN_FORCE_LOW_PRECISION=1" in here


def test_amx_cpu_says_bfloat16(capsys, cpu_features, no_gpu, monkeypatch):
    cpu_features(avx512_bf16=True, amx_bf16=True)
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")  # as TensorFlow has it on an AMX CPU (the bf16 rewrite needs it)
    here = precision_row(capsys, "--set", "precision_mode=allow_mix_precision_bf16")
    assert "here: bfloat16 on the CPU (this CPU has AMX-BF16" in here


def test_forced_says_the_low_dtype(capsys, force_low_precision, no_gpu):
    here = precision_row(capsys, "--set", "precision_mode=force_fp16")
    assert "here: float16 on the CPU (forced by NPURUN_FORCE_LOW_PRECISION=1" in here


def test_default_mode_stays_float32(capsys, cpu_features, no_gpu):
    assert "here: float32 (every op has a float32 kernel here" in precision_row(capsys)


def test_bad_switch_value_is_shown_not_raised(capsys, cpu_features, no_gpu, monkeypatch):
    monkeypatch.setenv("NPURUN_FORCE_LOW_PRECISION", "yes")
    assert "NPURUN_FORCE_LOW_PRECISION='yes' is not understood" in precision_row(
        capsys, "--set", "precision_mode=allow_mix_precision")


def test_explain_says_what_the_bf16_for_fp16_switch_does(capsys, cpu_features, no_gpu, monkeypatch):
    cpu_features(avx512_bf16=True, vendor="AuthenticAMD")  # AMD Zen 4: bf16 measured faster than float32
    here = precision_row(capsys, "--set", "precision_mode=allow_mix_precision")
    assert "here: float32" in here and "NPURUN_FP16_AS_BF16=1 runs it in bfloat16 instead" in here
    monkeypatch.setenv("NPURUN_FP16_AS_BF16", "1")
    here = precision_row(capsys, "--set", "precision_mode=allow_mix_precision")
    assert "here: bfloat16 in place of float16 on the CPU (NPURUN_FP16_AS_BF16=1; this AMD CPU has AVX512_BF16" in here
    cpu_features()  # no bf16 hardware: the switch does not apply, and explain says so
    here = precision_row(capsys, "--set", "precision_mode=force_fp16")
    assert "NPURUN_FP16_AS_BF16=1 does not apply, bfloat16 is not fast here" in here
