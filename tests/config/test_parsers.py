"""Tests for npurun.config.parsers: seed examples, error messages, fuzzing and round trips."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npurun.config import parsers as p
from npurun.config.parsers import (DimRange, FusionSwitch, MixListEdits, ProfilingOptions,
                                   ShapeRanges)

FAST = settings(max_examples=200, deadline=None)
# The text fuzzers run twice per parser (any text, grammar-like text): fewer examples each.
QUICK = settings(max_examples=100, deadline=None)

# The seed's modify_mixlist example, verbatim, with its `//` comments.
SEED_MIXLIST = """{
  "black-list": {                  // 黑名单
     "to-remove": [                // 黑名单算子转换为灰名单算子
     "Yolo"
     ],
     "to-add": [                   // 白名单或灰名单算子转换为黑名单算子
     "Matmul",
     "Cast"
     ]
  },
  "white-list": {                  // 白名单
     "to-remove": [                // 白名单算子转换为灰名单算子 
     "Conv2D"
     ],
     "to-add": [                   // 黑名单或灰名单算子转换为白名单算子
     "Bias"
     ]
  }
}
"""

SEED_FUSION_FULL = """{
    "Switch":{
        "GraphFusion":{
            "RequantFusionPass":"on",
            "ConvToFullyConnectionFusionPass":"off",
            "SoftmaxFusionPass":"on",
            "NotRequantFusionPass":"on",
            "ConvConcatFusionPass":"on",
            "MatMulBiasAddFusionPass":"on",
            "PoolingFusionPass":"on",
            "ZConcatv2dFusionPass":"on",
            "ZConcatExt2FusionPass":"on",
            "TfMergeSubFusionPass":"on"
        },
        "UBFusion":{
            "TbePool2dQuantFusionPass":"on"
        }
    }
}"""

SEED_FUSION_ALL_OFF_EXCEPT = """{
    "Switch":{
        "GraphFusion":{"ALL":"off", "SoftmaxFusionPass":"on"},
        "UBFusion":{"ALL":"off", "TbePool2dQuantFusionPass":"on"}
    }
}"""

TEXT_PARSERS = {
    "shape_ranges": p.parse_shape_ranges,
    "stream_parallel": p.parse_stream_parallel,
    "fusion_switch": p.parse_fusion_switch,
    "mixlist": p.parse_mixlist,
    "op_precision_ini": p.parse_op_precision_ini,
    "dump_step": p.parse_dump_step,
    "memory_size": p.parse_memory_size,
    "path_chars": p.check_path_chars,
    "comma_list": p.parse_comma_list,
    "comma_list_allowed": lambda text: p.parse_comma_list(text, allowed={"GA", "RL"}),
    "device_list": p.parse_device_list,
    "profiling_options": p.parse_profiling_options,
}
JSON_PARSERS = {name: TEXT_PARSERS[name]
                for name in ("fusion_switch", "mixlist", "profiling_options")}

# Characters each grammar is made of, so fuzzing reaches past the first check.
GRAMMAR_ALPHABETS = {
    "shape_ranges": "getnxdaT:[]0123456789~-,; ",
    "stream_parallel": "DNN_VM_TF100:,3 ",
    "fusion_switch": '{}":,SwitchGraphFusionUB ALLonf',
    "mixlist": '{}[]":,/\nblack-listwhgrytoadmvYC',
    "op_precision_ini": "Avg=high_precisionperformance#;[]\n\r ",
    "dump_step": "0123456789|- ",
    "memory_size": "0123456789 -+_",
    "path_chars": "/~a.-_测 \\:",
    "comma_list": "GARL, x",
    "comma_list_allowed": "GARL, x",
    "device_list": "0123456789,- ",
    "profiling_options": '{}":,outputl2aicpuonfMB0123',
}


def only_value_error(parse, value):
    """Call `parse`; anything but success or ValueError fails the test."""
    try:
        parse(value)
    except ValueError as err:
        assert str(err)  # a message is always given


# ------------------------------------------------------------------ fuzzing: only ValueError

@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
@QUICK
@given(text=st.text())
def test_any_text_raises_only_value_error(name, text):
    only_value_error(TEXT_PARSERS[name], text)


@pytest.mark.parametrize("name", sorted(GRAMMAR_ALPHABETS))
@QUICK
@given(data=st.data())
def test_grammar_like_text_raises_only_value_error(name, data):
    text = data.draw(st.text(alphabet=GRAMMAR_ALPHABETS[name], max_size=40))
    only_value_error(TEXT_PARSERS[name], text)


@pytest.mark.parametrize("name", sorted(set(TEXT_PARSERS) - {"memory_size"}))
@pytest.mark.parametrize("value", [None, b"0", 1, 1.5, True, [], {}, ("a",)])
def test_wrong_type_is_value_error(name, value):
    with pytest.raises(ValueError, match="expected text"):
        TEXT_PARSERS[name](value)


JSON_KEYS = st.sampled_from([
    "Switch", "GraphFusion", "UBFusion", "ALL", "black-list", "white-list", "gray-list", "to-add",
    "to-remove", "output", "training_trace", "aic_metrics", "storage_limit", "fp_point", "l2",
]) | st.text(max_size=8)
JSON_LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
               | st.text(max_size=8)
               | st.sampled_from(["on", "off", "", "PipeUtilization", "200MB"]))
JSON_VALUES = st.recursive(
    JSON_LEAVES, lambda children: st.lists(children, max_size=4)
    | st.dictionaries(JSON_KEYS, children, max_size=4), max_leaves=12)


@pytest.mark.parametrize("name", sorted(JSON_PARSERS))
@FAST
@given(value=JSON_VALUES)
def test_any_json_raises_only_value_error(name, value):
    only_value_error(JSON_PARSERS[name], json.dumps(value))


@FAST
@given(value=st.one_of(st.integers(), st.text(), st.none(), st.floats(), st.booleans()))
def test_memory_size_any_value_raises_only_value_error(value):
    only_value_error(p.parse_memory_size, value)


@pytest.mark.parametrize("name", sorted(JSON_PARSERS))
def test_deeply_nested_json_is_value_error(name):
    with pytest.raises(ValueError):
        JSON_PARSERS[name]("[" * 100_000 + "]" * 100_000)


# ------------------------------------------------------------------ strategies of valid values

DIMS = st.one_of(
    st.integers(0, 10**12).map(lambda n: DimRange(n, n)),
    st.just(DimRange(0, None)),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).map(lambda t: DimRange(min(t), max(t))),
)
SHAPES = st.lists(st.lists(DIMS, max_size=4).map(tuple), max_size=3).map(tuple)
SHAPE_RANGES = st.tuples(SHAPES, SHAPES).filter(lambda t: t[0] or t[1]).map(
    lambda t: ShapeRanges(*t))

STREAM_PARALLEL = st.permutations(p.STREAM_ENGINES).flatmap(
    lambda engines: st.lists(st.integers(1, 13), min_size=1, max_size=2).map(
        lambda ns: tuple(zip(engines, ns))))

PASS_SWITCHES = st.dictionaries(st.text(min_size=1, max_size=12) | st.just("ALL"), st.booleans(),
                                max_size=5).map(lambda d: tuple(d.items()))
FUSION_SWITCH = st.builds(FusionSwitch, graph_fusion=PASS_SWITCHES, ub_fusion=PASS_SWITCHES)

MIX_FIELDS = [f.replace("-list", "") + "_" + a.replace("to-", "")
              for f in p.MIX_LISTS for a in p.MIX_ACTIONS]


@st.composite
def mixlists(draw):
    """Unique op names each put in one slot: never added and removed, never added twice."""
    names = draw(st.lists(st.text(min_size=1, max_size=10), unique=True, max_size=12))
    fields: dict[str, list[str]] = {field: [] for field in MIX_FIELDS}
    for name in names:
        fields[draw(st.sampled_from(MIX_FIELDS))].append(name)
    return MixListEdits(**{field: tuple(ops) for field, ops in fields.items()})


OP_TYPES = st.text("ABCXYZabcxyz_019", min_size=1, max_size=16).filter(lambda s: not s[0].isdigit())
OP_PRECISION = st.dictionaries(OP_TYPES, st.sampled_from(p.OP_PRECISION_MODES), min_size=1,
                               max_size=8).map(lambda d: tuple(d.items()))


@st.composite
def dump_steps(draw):
    """Ascending, non-overlapping (first, last) pairs; the 100-item limit has its own test."""
    pieces = draw(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 30)),
                           min_size=1, max_size=20))
    steps, start = [], draw(st.integers(0, 50))
    for length, gap in pieces:
        steps.append((start, start + length))
        start += length + gap
    return tuple(steps)


NAME = st.text(st.characters(blacklist_categories=("Z", "Cc", "Cs"), blacklist_characters=","),
               min_size=1, max_size=10).filter(lambda s: not any(c.isspace() for c in s))
COMMA_LIST = st.lists(NAME, unique=True, min_size=1, max_size=6).map(tuple)
DEVICE_LIST = st.lists(st.integers(0, 7), unique=True, min_size=1).map(tuple)

ON_OFF = st.sampled_from(["on", "off"])
PROFILING = st.fixed_dictionaries({}, optional={
    # No NUL in any, and output is a path the file system can take (no lone surrogates).
    "output": st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=20),
    "fp_point": st.text(st.characters(blacklist_characters="\x00"), max_size=10),
    "bp_point": st.text(st.characters(blacklist_characters="\x00"), max_size=10),
    "aic_metrics": st.sampled_from(p.AIC_METRICS),
    "storage_limit": st.integers(200, 4294967295).map(lambda n: f"{n}MB"),
    **{key: ON_OFF for key in ("training_trace", "task_trace", "aicpu", "l2", "hccl", "msproftx",
                               "runtime_api", "task_time")},
}).map(lambda d: ProfilingOptions(tuple(d.items())))

ROUND_TRIPS = {
    "shape_ranges": (SHAPE_RANGES, p.parse_shape_ranges, p.format_shape_ranges),
    "stream_parallel": (STREAM_PARALLEL, p.parse_stream_parallel, p.format_stream_parallel),
    "fusion_switch": (FUSION_SWITCH, p.parse_fusion_switch, p.format_fusion_switch),
    "mixlist": (mixlists(), p.parse_mixlist, p.format_mixlist),
    "op_precision_ini": (OP_PRECISION, p.parse_op_precision_ini, p.format_op_precision_ini),
    "dump_step": (dump_steps(), p.parse_dump_step, p.format_dump_step),
    "memory_size": (st.integers(0, p.MEMORY_SIZE_MAX), p.parse_memory_size, p.format_memory_size),
    "comma_list": (COMMA_LIST, p.parse_comma_list, p.format_comma_list),
    "device_list": (DEVICE_LIST, p.parse_device_list, p.format_device_list),
    "profiling_options": (PROFILING, p.parse_profiling_options, p.format_profiling_options),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
@FAST
@given(data=st.data())
def test_round_trip(name, data):
    strategy, parse, fmt = ROUND_TRIPS[name]
    value = data.draw(strategy)
    text = fmt(value)
    assert parse(text) == value
    assert fmt(parse(text)) == text  # the format is canonical
    hash(value)  # immutable values are hashable


@FAST
@given(names=COMMA_LIST)
def test_comma_list_round_trip_with_allowed(names):
    assert p.parse_comma_list(p.format_comma_list(names), allowed=set(names)) == names


PATH_CHARS = st.sampled_from("abzAZ09_-.测试㐀䶿一鿿")


@FAST
@given(parts=st.lists(st.text(PATH_CHARS, min_size=1, max_size=8), min_size=1, max_size=4),
       absolute=st.booleans())
def test_valid_paths_are_returned_unchanged(parts, absolute):
    path = ("/" if absolute else "") + "/".join(parts)
    assert p.check_path_chars(path) == path


@FAST
@given(steps=dump_steps(), n=st.integers(-5, 5000))
def test_dump_step_contains_matches_brute_force(steps, n):
    assert p.dump_step_contains(steps, n) == any(a <= n <= b for a, b in steps)


# --------------------------------------------------------------------------- seed examples

def test_shape_ranges_seed_example():
    text = "getnext:[128 ,3~5, 2~128, -1],[64 ,3~5, 2~128, -1];data:[128 ,3~5, 2~128, -1]"
    value = p.parse_shape_ranges(text)
    tail = (DimRange(3, 5), DimRange(2, 128), DimRange(0, None))
    assert value == ShapeRanges(getnext=((DimRange(128, 128),) + tail, (DimRange(64, 64),) + tail),
                                data=((DimRange(128, 128),) + tail,))
    assert p.format_shape_ranges(value) == text.replace(" ", "")


def test_shape_ranges_second_seed_example_and_scalar():
    value = p.parse_shape_ranges("getnext:[3,3,4,10],[-1,3,2~1000,-1],[-1,-1,-1,-1]")
    assert len(value.getnext) == 3 and value.data == ()
    assert value.getnext[1][2] == DimRange(2, 1000)
    assert p.parse_shape_ranges("data:[]") == ShapeRanges(data=((),))
    assert p.parse_shape_ranges(" data : [ ] ; getnext:[1]").getnext == ((DimRange(1, 1),),)


def test_dim_range_contains_and_str():
    assert DimRange(3, 5).contains(3) and DimRange(3, 5).contains(5)
    assert not DimRange(3, 5).contains(6) and not DimRange(3, 5).contains(2)
    assert DimRange(0, None).contains(10**9)
    dims = (DimRange(5, 5), DimRange(0, None), DimRange(3, 5))
    assert [str(d) for d in dims] == ["5", "-1", "3~5"]


def test_stream_parallel_seed_example():
    expected = (("DNN_VM_TF", 10), ("DNN_V100", 1))
    assert p.parse_stream_parallel("DNN_VM_TF:10,DNN_V100:1") == expected
    assert p.parse_stream_parallel(" DNN_V100 : 13 ") == (("DNN_V100", 13),)


def test_fusion_switch_seed_examples():
    full = p.parse_fusion_switch(SEED_FUSION_FULL)
    assert full.state("GraphFusion", "ConvToFullyConnectionFusionPass") is False
    assert full.state("UBFusion", "TbePool2dQuantFusionPass") is True
    assert full.state("GraphFusion", "Unlisted") is None
    assert [name for name, _ in full.graph_fusion] == sorted(name for name, _ in full.graph_fusion)

    all_off = p.parse_fusion_switch(
        '{"Switch":{"GraphFusion":{"ALL":"off"},"UBFusion":{"ALL":"off"}}}')
    assert all_off.state("GraphFusion", "Anything") is False
    assert all_off.state("UBFusion", "Anything") is False

    mixed = p.parse_fusion_switch(SEED_FUSION_ALL_OFF_EXCEPT)
    assert mixed.state("GraphFusion", "SoftmaxFusionPass") is True
    assert mixed.state("GraphFusion", "PoolingFusionPass") is False
    assert mixed.state("ub_fusion", "TbePool2dQuantFusionPass") is True
    assert json.loads(p.format_fusion_switch(mixed)) == json.loads(SEED_FUSION_ALL_OFF_EXCEPT)


def test_mixlist_seed_example_with_comments():
    value = p.parse_mixlist(SEED_MIXLIST)
    assert value == MixListEdits(black_add=("Matmul", "Cast"), black_remove=("Yolo",),
                                 white_add=("Bias",), white_remove=("Conv2D",))
    assert value.get("gray-list", "to-add") == ()
    assert "//" not in p.format_mixlist(value)


def test_mixlist_comment_markers_inside_strings_are_kept():
    text = '{"gray-list": {"to-add": ["a//b", "c\\"//d"]}} // trailing'
    assert p.parse_mixlist(text).gray_add == ("a//b", 'c"//d')


def test_mixlist_duplicates_removed_in_order():
    assert p.parse_mixlist('{"black-list": {"to-add": ["B", "A", "B"]}}').black_add == ("B", "A")


def test_op_precision_ini_seed_example():
    text = "AvgPoolV2=high_precision\nReduceMeanD=high_performance\n"
    assert p.parse_op_precision_ini(text) == (("AvgPoolV2", "high_precision"),
                                              ("ReduceMeanD", "high_performance"))
    commented = "[ops]\r\n# comment\n; other\n\n  AvgPoolV2 = high_precision  \n"
    assert p.parse_op_precision_ini(commented) == (("AvgPoolV2", "high_precision"),)


def test_dump_step_example():
    assert p.parse_dump_step("0|5|10-20") == ((0, 0), (5, 5), (10, 20))
    assert p.parse_dump_step("7-7") == ((7, 7),)
    assert p.format_dump_step(p.parse_dump_step("7-7")) == "7"
    steps = p.parse_dump_step("0|5|10-20")
    assert [n for n in range(25) if p.dump_step_contains(steps, n)] == [0, 5, *range(10, 21)]


def test_dump_step_allows_at_most_100_items():
    assert len(p.parse_dump_step("|".join(str(2 * n) for n in range(100)))) == 100
    with pytest.raises(ValueError, match="at most 100"):
        p.parse_dump_step("|".join(str(2 * n) for n in range(101)))


def test_memory_size_examples():
    assert p.parse_memory_size(str(26 * 1024**3)) == 26 * 1024**3
    assert p.parse_memory_size(" 274877906944 ") == 274877906944
    assert p.parse_memory_size(0) == 0
    assert p.format_memory_size(5 * 1024**3) == "5368709120"


def test_path_examples():
    assert p.check_path_chars("/home/test/fusion_switch.cfg") == "/home/test/fusion_switch.cfg"
    assert p.check_path_chars("/home/测试/kernel_cache") == "/home/测试/kernel_cache"
    assert p.check_path_chars("~/atc_data") == os.path.expanduser("~/atc_data")
    assert p.check_path_chars("~") == os.path.expanduser("~")


def test_comma_and_device_list_examples():
    assert p.parse_comma_list("RL,GA", allowed={"GA", "RL"}) == ("RL", "GA")
    assert p.parse_comma_list("ScopeLayerNormPass, ScopeClipBoxesPass") == (
        "ScopeLayerNormPass", "ScopeClipBoxesPass")
    assert p.parse_device_list("0,1") == (0, 1)
    assert p.format_device_list((3, 0)) == "3,0"


def test_profiling_options_spec_example():
    text = ('{"output": "/tmp/profiling", "training_trace": "on", "task_trace": "on", '
            '"fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization"}')
    value = p.parse_profiling_options(text)
    assert value.get("output") == "/tmp/profiling"
    assert value.get("fp_point") == ""
    assert value.get("l2", "off") == "off"
    assert value.is_on("training_trace") and not value.is_on("hccl")
    assert p.format_profiling_options(value).startswith('{"aic_metrics":"PipeUtilization",')
    assert p.parse_profiling_options('{"storage_limit": "0250MB"}').get("storage_limit") == "250MB"


# --------------------------------------------------------------------------- error messages

BAD_INPUTS = [
    # (parser name, text, fragments the message must contain)
    ("shape_ranges", "", ["no shapes"]),
    ("shape_ranges", "getnext:", ["[128,3~5,-1]"]),
    ("shape_ranges", "input:[1,2]", ["'input'", "getnext", "data"]),
    ("shape_ranges", "data:[1];data:[2]", ["'data'", "twice"]),
    ("shape_ranges", "getnext:[1,x]", ["'x'", "-1", "lo~hi"]),
    ("shape_ranges", "getnext:[1,-2]", ["'-2'"]),
    ("shape_ranges", "getnext:[5~3]", ["'5~3'", "lower bound"]),
    ("shape_ranges", "getnext:[1][2]", ["'[2]'", "','"]),
    ("shape_ranges", "getnext:[1,]", ["''"]),
    ("shape_ranges", "[1,2]", ["'[1,2]'", "name:"]),
    ("stream_parallel", "DNN_VM_TF:14", ["14", "[1, 13]"]),
    ("stream_parallel", "DNN_VM_TF:0", ["0", "[1, 13]"]),
    ("stream_parallel", "DNN_X:3", ["'DNN_X'", "DNN_VM_TF", "DNN_V100"]),
    ("stream_parallel", "DNN_V100:1,DNN_V100:2", ["'DNN_V100'", "twice"]),
    ("stream_parallel", "DNN_V100:one", ["'one'"]),
    ("stream_parallel", "DNN_V100", ["'DNN_V100'", "ENGINE:N"]),
    ("fusion_switch", '{"Switch": {"GraphFusion": {"A": "yes"}}}', ["'yes'", '"on"', '"off"']),
    ("fusion_switch", '{"Switch": {"GraphFusion": {"A": true}}}', ["True", '"on"']),
    ("fusion_switch", '{"Switch": {"Other": {}}}', ["'Other'", "GraphFusion", "UBFusion"]),
    # The file's own text is not quoted when it is not of the format (it may be any file: FormatError).
    ("fusion_switch", '{"Switches": {}}', ["1 top-level key", "Switch"]),
    ("fusion_switch", '{"Switch": {"UBFusion": {"": "on"}}}', ["non-empty"]),
    ("fusion_switch", '{"Switch": {"UBFusion": []}}', ["UBFusion", "[]"]),
    ("fusion_switch", '{"Switch": ', ["not valid JSON", "line 1"]),
    ("mixlist", '{"red-list": {}}', ["1 top-level key", "black-list", "white-list", "gray-list"]),
    ("mixlist", '{"black-list": {"to-move": []}}', ["'to-move'", "to-add", "to-remove"]),
    ("mixlist", '{"black-list": {"to-add": "Cast"}}', ["'Cast'", "list"]),
    ("mixlist", '{"black-list": {"to-add": ["Cast", ""]}}', ["non-empty"]),
    ("mixlist", '{"black-list": {"to-add": ["Cast"], "to-remove": ["Cast"]}}', ["'Cast'", "both"]),
    ("mixlist", '{"black-list": {"to-add": ["Cast"]}, "white-list": {"to-add": ["Cast"]}}',
     ["'Cast'", "more than one list"]),
    ("mixlist", '{"black-list": {}} /* c */', ["not valid JSON"]),
    ("op_precision_ini", "", ["no 'OpType=mode'"]),
    ("op_precision_ini", "# only a comment\n", ["no 'OpType=mode'"]),
    ("op_precision_ini", "A=high_precision\nB=fast\n", ["line 2", "high_precision", "high_performance"]),
    ("op_precision_ini", "A=high_precision\n\nA=high_performance", ["line 3", "'A'", "line 1"]),
    ("op_precision_ini", "A high_precision", ["line 1", "'OpType=mode'"]),
    ("dump_step", "", ["step ''"]),
    ("dump_step", "5|3", ["'3'", "ascending"]),
    ("dump_step", "0-10|5", ["'5'", "overlap"]),
    ("dump_step", "20-10", ["'20-10'", "A <= B"]),
    ("dump_step", "1|x", ["'x'"]),
    ("dump_step", "|".join(map(str, range(101))), ["101", "100"]),
    ("memory_size", "274877906945", ["274877906945", "274877906944"]),
    ("memory_size", "-1", ["'-1'"]),
    ("memory_size", "1e9", ["'1e9'"]),
    ("memory_size", "9" * 5000, ["too large"]),
    ("path_chars", "", ["empty"]),
    ("path_chars", "/tmp/a b", ["' '", "index 6"]),
    ("path_chars", "/tmp/~x", ["'~'", "index 5"]),
    ("path_chars", "C:\\dir", ["':'", "index 1"]),
    ("comma_list", "a,,b", ["''"]),
    ("comma_list", "a,b,a", ["'a'", "twice"]),
    ("comma_list", "a b", ["'a b'", "whitespace"]),
    ("comma_list_allowed", "GA,XX", ["'XX'", "GA, RL"]),
    ("device_list", "0,8", ["8", "[0, 7]"]),
    ("device_list", "0,0", ["0", "twice"]),
    ("device_list", "", ["''"]),
    ("device_list", "0,-1", ["'-1'"]),
    ("profiling_options", '{"outputs": "/tmp"}', ["'outputs'", "output", "task_trace"]),
    ("profiling_options", '{"task_trace": "yes"}', ["'yes'", "'task_trace'", "on, off"]),
    ("profiling_options", '{"aic_metrics": "Pipe"}', ["'Pipe'", "PipeUtilization", "MemoryUB"]),
    ("profiling_options", '{"storage_limit": "100MB"}', ["'100MB'", "[200, 4294967295]"]),
    ("profiling_options", '{"storage_limit": 300}', ["300", "MB"]),
    ("profiling_options", '{"output": ""}', ["''", "non-empty"]),
    ("profiling_options", '{"l2": "on", "l2": "off"}', ["'l2'", "twice"]),
    ("profiling_options", "[]", ["JSON object"]),
    ("profiling_options", "{'output': 1}", ["not valid JSON"]),
]


@pytest.mark.parametrize("name, text, fragments", BAD_INPUTS)
def test_bad_input_message_quotes_fragment(name, text, fragments):
    with pytest.raises(ValueError) as info:
        TEXT_PARSERS[name](text)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize("value", [True, False, None, 1.0, -1, 274877906945, b"1", [1]])
def test_memory_size_bad_values(value):
    with pytest.raises(ValueError):
        p.parse_memory_size(value)


def test_value_classes_reject_invalid_fields():
    with pytest.raises(ValueError):
        DimRange(5, 3)
    with pytest.raises(ValueError):
        DimRange(2, None)
    with pytest.raises(ValueError):
        ShapeRanges()
    with pytest.raises(ValueError):
        FusionSwitch(graph_fusion=(("A", True), ("A", False)))
    with pytest.raises(ValueError):
        MixListEdits(white_add=("A",), white_remove=("A",))
    with pytest.raises(ValueError):
        ProfilingOptions((("colour", "on"),))
    with pytest.raises(ValueError, match="'Fusion'"):
        FusionSwitch().state("Fusion", "A")
