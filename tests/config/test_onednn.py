"""Whether TensorFlow runs oneDNN here (config/onednn.py, no TensorFlow import) and what `npurun
explain` says about the options whose effect depends on it. That the rule agrees with TensorFlow
on this machine is checked in tests/runtime/test_onednn_policy.py."""
import pytest

from npurun import NPURunConfig
from npurun.cli import explain
from npurun.config import onednn

ZEN3 = "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma bmi2\n"
ZEN4 = "processor\t: 0\nflags\t\t: fpu avx avx2 avx512f avx512_vnni avx512_bf16\n"
ALDER_LAKE = "processor\t: 0\nflags\t\t: fpu avx avx2 avx_vnni\n"
SAPPHIRE_RAPIDS = "processor\t: 0\nflags\t\t: avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n"
GRAVITON3 = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n"
GRAVITON2 = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"


@pytest.mark.parametrize("cpuinfo,machine,expected", [
    (ZEN3, "x86_64", False), (ZEN4, "x86_64", True), (ALDER_LAKE, "x86_64", True),
    (SAPPHIRE_RAPIDS, "x86_64", True), (GRAVITON3, "aarch64", True), (GRAVITON2, "aarch64", False),
    ("", "x86_64", False),
])
def test_cpu_default_follows_tensorflows_rule(cpuinfo, machine, expected):
    decided = onednn.decide({}, cpuinfo=cpuinfo, system="Linux", machine=machine)
    assert decided.enabled is expected
    assert "default on this CPU" in decided.reason


@pytest.mark.parametrize("value,expected", [("0", False), ("false", False), ("FALSE", False), ("1", True),
                                            ("true", True), ("True", True)])
def test_the_environment_variable_wins_over_the_cpu(value, expected):
    for cpuinfo in (ZEN3, SAPPHIRE_RAPIDS):
        decided = onednn.decide({"TF_ENABLE_ONEDNN_OPTS": value}, cpuinfo=cpuinfo, system="Linux", machine="x86_64")
        assert decided.enabled is expected and decided.reason == f"TF_ENABLE_ONEDNN_OPTS={value}"


@pytest.mark.parametrize("value", ["", "yes", "2"])
def test_a_value_that_is_not_a_boolean_keeps_the_cpu_default(value):
    # TensorFlow warns and keeps its default for these
    for cpuinfo, expected in ((ZEN3, False), (ZEN4, True)):
        env = {"TF_ENABLE_ONEDNN_OPTS": value}
        assert onednn.decide(env, cpuinfo=cpuinfo, system="Linux", machine="x86_64").enabled is expected


def test_other_systems():
    assert not onednn.decide({}, cpuinfo=ZEN4, system="Darwin", machine="arm64").enabled
    assert onednn.decide({}, cpuinfo="", system="Windows", machine="AMD64").enabled


ON = onednn.OneDnn(True, "test")
OFF = onednn.OneDnn(False, "test")


def _row(config, name, here):
    return next(r for r in explain.rows(config, here) if r["option"] == name)


def test_explain_bf16_has_an_effect_only_with_onednn():
    config = NPURunConfig(precision_mode="allow_mix_precision_bf16")
    assert _row(config, "precision_mode", ON)["kind"] == "effect"
    off = _row(config, "precision_mode", OFF)
    assert off["kind"] == "accepted, no effect here"
    assert "TF_ENABLE_ONEDNN_OPTS=1" in off["mechanism"] and "oneDNN is off" in off["mechanism"]
    # the other precision modes do not need oneDNN
    assert _row(NPURunConfig(precision_mode="allow_mix_precision"), "precision_mode", OFF)["kind"] == "effect"


def test_explain_variable_format_optimize_says_what_false_leaves_on_each_setting():
    config = NPURunConfig(variable_format_optimize=False)
    on, off = _row(config, "variable_format_optimize", ON), _row(config, "variable_format_optimize", OFF)
    # the layout optimizer converts with oneDNN on too (measured in tests/runtime): effect both ways
    assert on["kind"] == off["kind"] == "effect"
    assert "oneDNN's NCHW kernel" in on["mechanism"] and "oneDNN is on" in on["mechanism"]
    assert "no NCHW kernel" in off["mechanism"] and "oneDNN is off" in off["mechanism"]


def test_explain_table_names_the_setting_and_why():
    table = explain.render_table(NPURunConfig(), onednn=onednn.OneDnn(False, "TF_ENABLE_ONEDNN_OPTS=0"))
    assert "TensorFlow's oneDNN here: off (TF_ENABLE_ONEDNN_OPTS=0)" in table


def test_explain_decides_from_the_environment(monkeypatch):
    config = NPURunConfig(precision_mode="allow_mix_precision_bf16")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    assert _row(config, "precision_mode", None)["kind"] == "accepted, no effect here"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    assert _row(config, "precision_mode", None)["kind"] == "effect"


def test_explain_does_not_promise_bf16_when_onednn_is_off():
    off = _row(NPURunConfig(precision_mode="allow_mix_precision_bf16"), "precision_mode", OFF)
    assert "bfloat16 on the CPU" not in off["mechanism"]
