"""The per-machine policy for low-precision modes (npurun.precision.policy): plain Python, no TensorFlow.

Machines come from /proc/cpuinfo excerpts in tests/precision/cpuinfo/ (the features fixture).
"""
import pathlib
import subprocess
import sys
import warnings

import pytest

from npurun.precision import policy

CPUINFO = pathlib.Path(__file__).parent / "cpuinfo"
FP16_MODES = ("allow_mix_precision", "allow_mix_precision_fp16", "force_fp16")
BF16 = "allow_mix_precision_bf16"


def machine(name):
    return policy.read_cpu_features(str(CPUINFO / f"{name}.txt"))


@pytest.mark.parametrize("name, expected", [
    ("zen3", dict(vendor="AuthenticAMD")),
    ("zen4", dict(avx512_bf16=True, vendor="AuthenticAMD")),
    ("cooper_lake", dict(avx512_bf16=True, vendor="GenuineIntel")),
    ("sapphire_rapids", dict(avx512_bf16=True, amx_bf16=True, avx512_fp16=True, vendor="GenuineIntel")),
    ("granite_rapids", dict(avx512_bf16=True, amx_bf16=True, avx512_fp16=True, amx_fp16=True, vendor="GenuineIntel")),
])
def test_features_are_read_from_cpuinfo_flags(name, expected):
    assert machine(name) == policy.CpuFeatures(**expected)


def test_unknown_vendor_uses_the_vendor_independent_measurement():
    flags = dict(avx512_bf16=True)
    assert policy.decide(BF16, gpu=False, features=policy.CpuFeatures(**flags)).fallback
    assert not policy.decide(BF16, gpu=False, features=policy.CpuFeatures(**flags, vendor="AuthenticAMD")).fallback


def test_unreadable_cpuinfo_means_no_features(tmp_path):
    assert policy.read_cpu_features(str(tmp_path / "missing")) == policy.CpuFeatures()


# (mode, machine, gpu) -> dtype under the default policy (None: float32) and whether that is a fallback.
DEFAULT_POLICY = [
    *[(mode, name, False, None, True) for mode in FP16_MODES
      for name in ("zen3", "zen4", "cooper_lake", "sapphire_rapids", "granite_rapids")],
    *[(mode, "zen3", True, "float16", False) for mode in FP16_MODES],
    (BF16, "zen3", False, None, True),
    (BF16, "zen4", False, "bfloat16", False),  # AMD Zen 4's AVX512_BF16: measured about 3x float32
    (BF16, "cooper_lake", False, None, True),  # Intel's AVX512_BF16 without AMX: measured 0.68x
    (BF16, "sapphire_rapids", False, "bfloat16", False),
    (BF16, "granite_rapids", False, "bfloat16", False),
    (BF16, "zen3", True, None, True),  # TensorFlow's bf16 rewrite is CPU-only: the CPU decides
    (BF16, "sapphire_rapids", True, "bfloat16", False),
    *[(mode, name, gpu, None, False) for mode in (None, "allow_fp32_to_fp16", "force_fp32", "must_keep_origin_dtype")
      for name in ("zen3", "sapphire_rapids") for gpu in (False, True)],
]


@pytest.mark.parametrize("mode, name, gpu, dtype, fallback", DEFAULT_POLICY)
def test_default_policy(mode, name, gpu, dtype, fallback):
    decision = policy.decide(mode, gpu=gpu, features=machine(name))
    assert (decision.dtype, decision.fallback, decision.forced) == (dtype, fallback, False)
    if fallback:
        assert "here: float32" in decision.summary() and f"{policy.FORCE_ENV}=1" in decision.summary()
        assert f"{policy.FORCE_ENV}=1" in decision.warning() and repr(decision.mode) in decision.warning()


@pytest.mark.parametrize("mode, dtype", [(m, "float16") for m in FP16_MODES] + [(BF16, "bfloat16")])
@pytest.mark.parametrize("name", ["zen3", "zen4", "sapphire_rapids", "granite_rapids"])
def test_forcing_lowers_on_every_cpu(mode, dtype, name):
    decision = policy.decide(mode, gpu=False, features=machine(name), force=True)
    assert (decision.dtype, decision.device, decision.fallback) == (dtype, "CPU", False)
    assert f"forced by {policy.FORCE_ENV}=1" in decision.summary()


@pytest.mark.parametrize("mode", [None, "allow_fp32_to_fp16", "force_fp32", "must_keep_origin_dtype"])
def test_forcing_leaves_float32_modes_alone(mode):
    assert policy.decide(mode, gpu=False, features=machine("zen3"), force=True).dtype is None


def test_the_fallback_reason_names_the_missing_hardware():
    fp16 = policy.decide("allow_mix_precision", gpu=False, features=machine("zen4"))
    assert "no AVX512-FP16 or AMX-FP16" in fp16.reason and "slower than float32" in fp16.reason
    bf16 = policy.decide(BF16, gpu=False, features=machine("cooper_lake"))
    assert "this Intel CPU has AVX512_BF16 (no AMX-BF16)" in bf16.reason and "slower than float32" in bf16.reason
    unmeasured = policy.decide("allow_mix_precision", gpu=False, features=machine("granite_rapids"))
    assert "AMX-FP16" in unmeasured.reason and "not measured" in unmeasured.reason


@pytest.mark.parametrize("value, expected", [(None, False), ("", False), ("0", False), ("1", True), (" 1 ", True)])
def test_force_switch_values(value, expected):
    environ = {} if value is None else {policy.FORCE_ENV: value}
    assert policy.forced(environ) is expected


def test_force_switch_rejects_other_values():
    with pytest.raises(ValueError, match=f"{policy.FORCE_ENV}='yes'.*set it to 1"):
        policy.forced({policy.FORCE_ENV: "yes"})


def test_fallback_warns_once_per_mode(monkeypatch):
    monkeypatch.setattr(policy, "_warned", set())
    features = machine("zen3")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for mode in ("allow_mix_precision", "allow_mix_precision", BF16, BF16, None):
            policy.warn_once(policy.decide(mode, gpu=False, features=features))
    messages = [str(w.message) for w in caught if issubclass(w.category, policy.LowPrecisionFallbackWarning)]
    assert len(messages) == 2
    assert "'allow_mix_precision'" in messages[0] and f"'{BF16}'" in messages[1]


@pytest.mark.parametrize("mode", FP16_MODES)
@pytest.mark.parametrize("name", ["zen4", "sapphire_rapids", "granite_rapids"])
def test_bf16_substitution_runs_fp16_modes_in_bf16_where_bf16_is_fast(mode, name):
    decision = policy.decide(mode, gpu=False, features=machine(name), substitute=True)
    assert (decision.dtype, decision.device, decision.substituted, decision.fallback) == ("bfloat16", "CPU", True, False)
    assert decision.summary().startswith("here: bfloat16 in place of float16 on the CPU (NPURUN_FP16_AS_BF16=1; ")
    assert f"precision_mode={mode!r} runs in bfloat16 in place of float16" in decision.substitution_warning()
    # without the switch the mode keeps its float16 rule, and explain says what the switch would do
    plain = policy.decide(mode, gpu=False, features=machine(name))
    assert not plain.substituted and "NPURUN_FP16_AS_BF16=1 runs it in bfloat16 instead" in plain.summary()


@pytest.mark.parametrize("name", ["zen3", "cooper_lake"])
def test_bf16_substitution_does_not_apply_where_bf16_is_slow(name):
    decision = policy.decide("allow_mix_precision", gpu=False, features=machine(name), substitute=True)
    assert (decision.dtype, decision.fallback, decision.substituted) == (None, True, False)
    assert "NPURUN_FP16_AS_BF16=1 does not apply, bfloat16 is not fast here" in decision.summary()
    assert "NPURUN_FP16_AS_BF16" not in policy.decide("allow_mix_precision", gpu=False,
                                                      features=machine(name)).summary()


def test_bf16_substitution_leaves_gpus_bf16_and_float32_modes_alone():
    gpu = policy.decide("allow_mix_precision", gpu=True, features=machine("sapphire_rapids"), substitute=True)
    assert (gpu.dtype, gpu.device, gpu.substituted) == ("float16", "GPU", False)
    assert "changes nothing on a GPU" in gpu.summary()
    bf16 = policy.decide(BF16, gpu=False, features=machine("zen4"), substitute=True)
    assert (bf16.dtype, bf16.substituted) == ("bfloat16", False)
    for mode in (None, "allow_fp32_to_fp16", "force_fp32", "must_keep_origin_dtype"):
        assert policy.decide(mode, gpu=False, features=machine("zen4"), substitute=True).dtype is None


@pytest.mark.parametrize("value, expected", [(None, False), ("", False), ("0", False), ("1", True)])
def test_substitution_switch_values(value, expected):
    assert policy.substituting({} if value is None else {policy.SUBSTITUTE_ENV: value}) is expected
    with pytest.raises(ValueError, match="NPURUN_FP16_AS_BF16='on' is not understood: set it to 1"):
        policy.substituting({policy.SUBSTITUTE_ENV: "on"})


def test_substitution_warns_once_per_mode(monkeypatch):
    monkeypatch.setattr(policy, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for mode in ("allow_mix_precision", "allow_mix_precision", "force_fp16"):
            policy.warn_once(policy.decide(mode, gpu=False, features=machine("zen4"), substitute=True))
    messages = [str(w.message) for w in caught if issubclass(w.category, policy.LowPrecisionSubstitutionWarning)]
    assert len(messages) == 2 and len(caught) == 2
    assert "'allow_mix_precision' runs in bfloat16 in place of float16" in messages[0]
    assert "this AMD CPU has AVX512_BF16" in messages[0] and "Unset NPURUN_FP16_AS_BF16" in messages[0]


def test_gpu_guess_respects_cuda_visible_devices():
    assert policy.gpu_likely_present({"CUDA_VISIBLE_DEVICES": "-1"}) is False
    assert policy.gpu_likely_present({"CUDA_VISIBLE_DEVICES": ""}) is False


def test_policy_imports_no_tensorflow():
    probe = ("import sys\nfrom npurun.precision import policy\npolicy.decide_here('allow_mix_precision')\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
