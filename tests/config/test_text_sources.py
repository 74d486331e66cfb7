"""Options from text (`--set name=value`, YAML/JSON config files): YAML reads `0` as an int and `true`
as a bool, but an option whose value is text (dump_step "0|5|10-20", jit_compile "true", a directory)
means the text; every other option keeps YAML's type and its error names option, value and rule."""
import json

import pytest

from npurun.cli import main
from npurun.config import OPTIONS, sources
from npurun.config.dump import DumpConfig
from npurun.config.profiling import ProfilingConfig

NESTED = {"dump_config": DumpConfig, "profiling_config": ProfilingConfig}
NOT_FROM_TEXT = ("session_config", "distribute", "train_distribute", "eval_distribute")
# What users type after `name=`.
FORMS = ("true", "false", "True", "1", "0", "10", "1.5", '"1"', "[1,2]", "null", "0|5|10-20", "0,1", "off")


def _every_option():
    for name, option in OPTIONS.items():
        if name in NESTED:
            for field, inner in NESTED[name].OPTIONS.items():
                yield f"{name}.{field}", inner, NESTED[name].OWNER
        elif name not in NOT_FROM_TEXT:
            yield name, option, "NPURunConfig"


def _value_from_set(name, form):
    options = sources.parse_assignments([f"{name}={form}"])
    outer, _, inner = name.partition(".")
    return options[outer][inner] if inner else options[name]


@pytest.mark.parametrize("name,option,owner", list(_every_option()), ids=lambda p: p if isinstance(p, str) else "")
def test_every_option_gets_a_value_it_accepts_or_an_error_naming_it(name, option, owner):
    text_valued = getattr(option.codec, "field", None) == "s"
    for form in FORMS:
        value = _value_from_set(name, form)
        try:
            stored = option.check(value, owner)
        except (TypeError, ValueError) as error:
            message = str(error)
            assert f"'{name.rpartition('.')[2]}'" in message and "allowed:" in message, (form, message)
            assert repr(value) in message, (form, message)  # the value as it reached the option
            continue
        if text_valued and value is not None:
            assert isinstance(value, str), (form, value)  # the NPU's parameter map holds text for it
        assert stored is not None or form == "null"


@pytest.mark.parametrize("form,text", [("0", "0"), ("10", "10"), ("0|5|10-20", "0|5|10-20")])
def test_dump_step_from_set_is_the_text_typed(form, text, tmp_path):
    options = sources.parse_assignments(["dump_config.enable_dump=true", f"dump_config.dump_path={tmp_path}",
                                         f"dump_config.dump_step={form}"])
    config = sources.construct(options)
    assert config.dump_config.dump_step == text
    assert config.dump_config.steps == DumpConfig(dump_step=text).steps


@pytest.mark.parametrize("suffix,content", [
    (".yaml", "dump_config:\n  dump_step: 0\njit_compile: true\nmodel_dir: 2024\n"),
    (".json", json.dumps({"dump_config": {"dump_step": 0}, "jit_compile": True, "model_dir": 2024})),
])
def test_config_files_give_text_options_their_text(suffix, content, tmp_path):
    path = tmp_path / f"run{suffix}"
    path.write_text(content)
    config = sources.construct(sources.load_file(str(path)))
    assert (config.dump_config.dump_step, config.jit_compile, config.model_dir) == ("0", "true", "2024")


def test_text_typed_on_the_command_line_is_kept_as_typed():
    assert _value_from_set("jit_compile", "True") == "true"  # jit_compile takes lower case only
    assert _value_from_set("dump_config.dump_layer", "off") == "off"  # YAML's bool word, a layer name here
    assert _value_from_set("dump_config.dump_step", "007") == "007"  # YAML 1.1 reads 007 as an octal int
    assert _value_from_set("aoe_mode", "1") == "1"  # a text entry of the parameter map
    memory = OPTIONS["graph_memory_max_size"]  # a text entry too; the option reads the number of bytes in it
    assert memory.check(_value_from_set("graph_memory_max_size", "1024")) == 1024


def test_typed_options_keep_yaml_types():
    assert _value_from_set("iterations_per_loop", "10") == 10
    assert _value_from_set("save_checkpoints_secs", "1.5") == 1.5
    assert _value_from_set("enable_data_pre_proc", "false") is False
    assert _value_from_set("dump_config.enable_dump", "true") is True


@pytest.mark.parametrize("assignment,message", [
    ("dump_config.enable_dump=1", "DumpConfig option 'enable_dump': got 1 (int); allowed: True or False"),
    ("jit_compile=1", "option 'jit_compile': got 1 (int); allowed: one of 'auto', 'true', 'false'"),
    ("iterations_per_loop=true", "option 'iterations_per_loop': got True (bool); allowed: an int in [1, 2147483646]"),
    ("dump_config.dump_step=1.5", "DumpConfig option 'dump_step': got 1.5 (float); allowed: steps like"),
])
def test_wrong_values_from_the_command_line_name_option_value_and_rule(assignment, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["explain", "--set", assignment])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_explain_accepts_dump_step_zero(tmp_path, capsys):
    assert main(["explain", "--format", "json", "--only-set", "--set", "dump_config.enable_dump=true",
                 "--set", f"dump_config.dump_path={tmp_path}", "--set", "dump_config.dump_step=0"]) == 0
    rows = {row["option"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["dump_config"]["value"]["dump_step"] == "0"


def test_none_as_the_option_rules_write_it_means_none_where_none_is_allowed():
    assert _value_from_set("keep_checkpoint_max", "None") is None  # rule: "an int >= 0 or None"
    assert _value_from_set("dump_config.dump_layer", "None") is None  # rule: "None for all ops"
    assert _value_from_set("model_dir", "None") is None
    with pytest.raises(ValueError, match=r"option 'iterations_per_loop': got 'None' \(str\); allowed: an int in \[1, 2147483646\]"):
        sources.construct(sources.parse_assignments(["iterations_per_loop=None"]))


def test_numbers_yaml_reads_as_text_are_numbers_where_the_option_takes_a_number():
    assert _value_from_set("save_checkpoints_secs", "1e3") == 1000.0  # YAML 1.1 wants 1.0e+3
    assert _value_from_set("iterations_per_loop", '"10"') == 10
    assert _value_from_set("dump_config.dump_layer", "1e3") == "1e3"  # a text option keeps the text
    with pytest.raises(ValueError, match=r"option 'save_checkpoints_secs': got 'soon' \(str\); allowed: a number > 0"):
        sources.construct(sources.parse_assignments(["save_checkpoints_secs=soon"]))
