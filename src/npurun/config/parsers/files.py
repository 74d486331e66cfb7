"""Parsers for JSON and ini option values: fusion switch files, mixed-precision lists,
op precision ini files and profiling options."""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ._common import FormatError, _q, _require_text, path_problem


# --------------------------------------------------------------------------- JSON helpers

def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json hook: a key given twice is an error (json.loads would silently keep the last)."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {_q(key)} appears twice in one JSON object")
        result[key] = value
    return result


def _load_json_object(text: str, what: str, *, file: bool = False) -> dict[str, Any]:
    """Rule: the text is JSON whose top level is an object; errors say where parsing stopped.

    For a `file`'s text the errors are `FormatError`s that do not quote it (see FormatError)."""
    try:
        data = json.loads(_require_text(text), object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as err:
        where = f"{err.msg} at line {err.lineno} column {err.colno}"
        if file:
            raise FormatError(f"{what} is not valid JSON: {where}") from None
        raise ValueError(f"{what} is not valid JSON: {where}, near {_q(err.doc[err.pos:err.pos + 30])}") from None
    except RecursionError:
        raise (FormatError if file else ValueError)(f"{what} is nested too deeply to be read") from None
    if not isinstance(data, dict):
        if file:
            raise FormatError(f"{what} must be a JSON object {{...}}, got a JSON {type(data).__name__}")
        raise ValueError(f"{what} must be a JSON object {{...}}, got {_q(data)}")
    return data


def _check_top_keys(obj: dict[str, Any], allowed: Collection[str], what: str) -> None:
    """Rule: a file's top-level keys are all `allowed`; else it is not such a file (not quoted)."""
    unknown = sum(key not in allowed for key in obj)
    if unknown:
        raise FormatError(f"{what}: {unknown} top-level key(s) not one of {', '.join(allowed)}")


def _check_keys(obj: dict[str, Any], allowed: Collection[str], where: str) -> None:
    """Rule: every key of `obj` is one of `allowed`; the message names the key and the choices."""
    for key in obj:
        if key not in allowed:
            raise ValueError(f"unknown key {_q(key)} in {where}; allowed: {', '.join(allowed)}")


def _on_off(value: object, where: str) -> bool:
    """Rule: switch values are exactly the strings "on" or "off"."""
    if not isinstance(value, str) or value not in ("on", "off"):
        raise ValueError(f"value {_q(value)} for {where} is not allowed; allowed: \"on\", \"off\"")
    return value == "on"


# --------------------------------------------------------------------------- fusion switch

FUSION_GROUPS = {"GraphFusion": "graph_fusion", "UBFusion": "ub_fusion"}
Switches = tuple[tuple[str, bool], ...]


def _canonical_switches(entries: Switches, group: str) -> Switches:
    """Sort by pass name (the canonical order); a name must be a non-empty string, once."""
    names = [name for name, _ in entries]
    for name, state in entries:
        if not isinstance(name, str) or not name or not isinstance(state, bool):
            raise ValueError(f"{group} entry {_q((name, state))} needs a non-empty name and a bool")
        if names.count(name) > 1:
            raise ValueError(f"{group} pass {_q(name)} is given twice")
    return tuple(sorted(entries))


@dataclass(frozen=True)
class FusionSwitch:
    """The fusion switch file: per group, (pass name, on?) pairs sorted by name."""
    graph_fusion: Switches = ()
    ub_fusion: Switches = ()

    def __post_init__(self) -> None:
        for group, field in FUSION_GROUPS.items():
            object.__setattr__(self, field, _canonical_switches(tuple(getattr(self, field)), group))

    def state(self, group: str, name: str) -> bool | None:
        """A named entry wins; else the group's "ALL" entry; else None (the default, on)."""
        field = FUSION_GROUPS.get(group, group)
        if field not in FUSION_GROUPS.values():
            raise ValueError(f"fusion group {_q(group)} is unknown; "
                             f"allowed: {', '.join(FUSION_GROUPS)}")
        switches = dict(getattr(self, field))
        return switches.get(name, switches.get("ALL"))


def parse_fusion_switch(text: str) -> FusionSwitch:
    """`{"Switch": {"GraphFusion": {name: "on"|"off"}, "UBFusion": {...}}}`; groups optional."""
    data = _load_json_object(text, "fusion switch file", file=True)
    _check_top_keys(data, ("Switch",), "fusion switch file")
    if "Switch" not in data or not isinstance(data["Switch"], dict):
        raise ValueError('expected {"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}')
    groups = data["Switch"]
    _check_keys(groups, tuple(FUSION_GROUPS), '"Switch"')
    fields = {}
    for group, passes in groups.items():
        if not isinstance(passes, dict):
            raise ValueError(f"{group} must be an object of pass name -> \"on\"/\"off\", "
                             f"got {_q(passes)}")
        fields[FUSION_GROUPS[group]] = tuple(
            (name, _on_off(state, f"{group} pass {_q(name)}")) for name, state in passes.items())
    return FusionSwitch(**fields)


def format_fusion_switch(value: FusionSwitch) -> str:
    """Canonical text: JSON with sorted keys; an empty group is omitted."""
    groups = {group: {name: "on" if on else "off" for name, on in getattr(value, field)}
              for group, field in FUSION_GROUPS.items() if getattr(value, field)}
    return json.dumps({"Switch": groups}, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------- mixed precision lists

MIX_LISTS = {"black-list": "black", "white-list": "white", "gray-list": "gray"}
MIX_ACTIONS = {"to-add": "add", "to-remove": "remove"}


@dataclass(frozen=True)
class MixListEdits:
    """Edits to the mixed-precision op lists; each field keeps the given order, without repeats."""
    black_add: tuple[str, ...] = ()
    black_remove: tuple[str, ...] = ()
    white_add: tuple[str, ...] = ()
    white_remove: tuple[str, ...] = ()
    gray_add: tuple[str, ...] = ()
    gray_remove: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for list_name, short in MIX_LISTS.items():
            for action, verb in MIX_ACTIONS.items():
                ops = getattr(self, f"{short}_{verb}")
                if not (isinstance(ops, (tuple, list))
                        and all(isinstance(op, str) and op for op in ops)):
                    raise ValueError(f'"{list_name}" "{action}" must be a list of non-empty '
                                     f"op names, got {_q(ops)}")
                object.__setattr__(self, f"{short}_{verb}", tuple(dict.fromkeys(ops)))
            both = set(self.get(list_name, "to-add")) & set(self.get(list_name, "to-remove"))
            if both:
                raise ValueError(f"op {_q(min(both))} is both added to and removed from "
                                 f'"{list_name}"')
        # An op can sit on one list only, so adding it to two lists is contradictory.
        added = [op for name in MIX_LISTS for op in self.get(name, "to-add")]
        twice = sorted({op for op in added if added.count(op) > 1})
        if twice:
            raise ValueError(f"op {_q(twice[0])} is added to more than one list; "
                             "an op can be on one list only")

    def get(self, list_name: str, action: str) -> tuple[str, ...]:
        """The ops for e.g. ("black-list", "to-add")."""
        if list_name not in MIX_LISTS or action not in MIX_ACTIONS:
            raise ValueError(f"unknown list/action {_q((list_name, action))}; allowed lists: "
                             f"{', '.join(MIX_LISTS)}; actions: {', '.join(MIX_ACTIONS)}")
        return getattr(self, f"{MIX_LISTS[list_name]}_{MIX_ACTIONS[action]}")


def _strip_line_comments(text: str) -> str:
    """Drop `// ...` up to the end of a line, except inside JSON strings (the seed uses them)."""
    out, i, in_string = [], 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":  # copy the escaped character too, so `\"` does not end the string
                out.append(text[i:i + 2])
                i += 2
                continue
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
        elif text.startswith("//", i):
            end = text.find("\n", i)
            # Keep the newline, so line numbers in JSON errors still match the user's file.
            i = len(text) if end < 0 else end
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_mixlist(text: str) -> MixListEdits:
    """`{"black-list": {"to-add": [...], "to-remove": [...]}, "white-list": ..., "gray-list": ...}`.

    Lists and actions are optional; `//` line comments are allowed."""
    data = _load_json_object(_strip_line_comments(_require_text(text)), "mixlist file", file=True)
    _check_top_keys(data, tuple(MIX_LISTS), "mixlist file")
    fields = {}
    for list_name, actions in data.items():
        if not isinstance(actions, dict):
            raise ValueError(f'"{list_name}" must be an object with "to-add"/"to-remove", '
                             f"got {_q(actions)}")
        _check_keys(actions, tuple(MIX_ACTIONS), f'"{list_name}"')
        for action, ops in actions.items():
            if not isinstance(ops, list):
                raise ValueError(f'"{list_name}" "{action}" must be a list of op names, '
                                 f"got {_q(ops)}")
            fields[f"{MIX_LISTS[list_name]}_{MIX_ACTIONS[action]}"] = tuple(ops)
    return MixListEdits(**fields)


def format_mixlist(value: MixListEdits) -> str:
    """Canonical text: JSON without comments; lists and actions in a fixed order, empty omitted."""
    data: dict[str, dict[str, list[str]]] = {}
    for list_name in MIX_LISTS:
        for action in MIX_ACTIONS:
            if value.get(list_name, action):
                data.setdefault(list_name, {})[action] = list(value.get(list_name, action))
    return json.dumps(data, ensure_ascii=False)


# --------------------------------------------------------------------------- op precision ini

OP_PRECISION_MODES = ("high_precision", "high_performance")
_OP_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_op_precision_ini(text: str) -> tuple[tuple[str, str], ...]:
    """Lines `OpType=mode`, each op type once, at least one line; errors give the line number.

    Blank lines, `#` and `;` comment lines and `[section]` header lines are skipped."""
    entries: dict[str, tuple[str, int]] = {}
    # Split on real line ends only: str.splitlines() would also split on \x0b, \u2028 and others.
    for number, raw in enumerate(re.split(r"\r\n|\r|\n", _require_text(text)), start=1):
        line = raw.strip()
        if not line or line[0] in "#;" or re.fullmatch(r"\[[^\]]*\]", line):
            continue
        op, sep, mode = (part.strip() for part in line.partition("="))
        # Not quoted (FormatError): a line of another kind of file may be anything.
        if not sep or not _OP_TYPE.fullmatch(op):
            raise FormatError(f"line {number} is not 'OpType=mode' (e.g. 'AvgPoolV2=high_precision')")
        if mode not in OP_PRECISION_MODES:
            raise FormatError(f"line {number}: the mode after '=' is not one of {', '.join(OP_PRECISION_MODES)}")
        if op in entries:
            raise ValueError(f"line {number}: op type {_q(op)} is already set "
                             f"on line {entries[op][1]}")
        entries[op] = (mode, number)
    if not entries:
        raise ValueError("no 'OpType=mode' entries found (e.g. 'AvgPoolV2=high_precision')")
    return tuple((op, mode) for op, (mode, _) in entries.items())


def format_op_precision_ini(value: tuple[tuple[str, str], ...]) -> str:
    """Canonical text: one `OpType=mode` line per entry, in order, ending with a newline."""
    return "".join(f"{op}={mode}\n" for op, mode in value)


# --------------------------------------------------------------------------- profiling options

AIC_METRICS = ("ArithmeticUtilization", "PipeUtilization", "Memory", "MemoryL0",
               "ResourceConflictRatio", "MemoryUB")
_SWITCH_KEYS = ("training_trace", "task_trace", "aicpu", "l2", "hccl", "msproftx",
                "runtime_api", "task_time")
STORAGE_LIMIT_MB = (200, 4294967295)


def _check_string(key: str, value: object, non_empty: bool = False) -> str:
    """Rule: a JSON string (for `output`, also non-empty)."""
    if not isinstance(value, str) or (non_empty and not value):
        raise ValueError(f"value {_q(value)} for {key!r} is not allowed; allowed: a "
                         f"{'non-empty ' if non_empty else ''}string")
    if "\x00" in value:
        raise ValueError(f"value {_q(value)} for {key!r} is not allowed: it holds a NUL character")
    return value


def _check_output(key: str, value: object) -> str:
    """Rule: `output` is a non-empty string the file system can take as a directory path."""
    _check_string(key, value, non_empty=True)
    problem = path_problem(value)
    if problem is not None:
        raise ValueError(f"value {_q(value)} for {key!r} is not a usable directory path: {problem}")
    return value


def _check_choice(choices: tuple[str, ...]) -> Callable[[str, object], str]:
    """A check that the value is one of `choices` (strings)."""
    def check(key: str, value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise ValueError(f"value {_q(value)} for {key!r} is not allowed; "
                             f"allowed: {', '.join(choices)}")
        return value
    return check


def _check_storage_limit(key: str, value: object) -> str:
    """Rule: `<N>MB` with N in [200, 4294967295]; canonicalised without leading zeros."""
    lo, hi = STORAGE_LIMIT_MB
    match = re.fullmatch(r"([0-9]{1,20})MB", value) if isinstance(value, str) else None
    if not match or not lo <= int(match.group(1)) <= hi:
        raise ValueError(f"value {_q(value)} for {key!r} is not allowed; allowed: '<N>MB' "
                         f"with N in [{lo}, {hi}]")
    return f"{int(match.group(1))}MB"


_PROFILING_CHECKS: dict[str, Callable[[str, object], str]] = {
    "output": _check_output,
    "fp_point": _check_string,
    "bp_point": _check_string,
    "aic_metrics": _check_choice(AIC_METRICS),
    "storage_limit": _check_storage_limit,
    **{key: _check_choice(("on", "off")) for key in _SWITCH_KEYS},
}


@dataclass(frozen=True)
class ProfilingOptions:
    """Profiling options as (key, value) pairs sorted by key; values are canonical strings."""
    items: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        checked = {}
        for key, value in dict(self.items).items():
            if key not in _PROFILING_CHECKS:
                raise ValueError(f"unknown profiling option {_q(key)}; allowed: "
                                 f"{', '.join(sorted(_PROFILING_CHECKS))}")
            checked[key] = _PROFILING_CHECKS[key](key, value)
        if len(checked) != len(self.items):
            raise ValueError(f"a profiling option is given twice in {_q(self.items)}")
        object.__setattr__(self, "items", tuple(sorted(checked.items())))

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value for `key`, or `default` when it is not set."""
        return dict(self.items).get(key, default)

    def is_on(self, key: str) -> bool:
        """True when an on/off option is set to "on"; unset counts as off."""
        return self.get(key) == "on"


def parse_profiling_options(text: str) -> ProfilingOptions:
    """A JSON object of the known profiling keys, each with its allowed values."""
    return ProfilingOptions(tuple(_load_json_object(text, "profiling options").items()))


_LEGACY_LIST = re.compile(r"\s*[A-Za-z_]+(\s*:\s*[A-Za-z_]+)*\s*")


def is_legacy_profiling_list(text: object) -> bool:
    """Older adapters' form of profiling_options: switch names joined by ':' ('training_trace:task_trace')."""
    return isinstance(text, str) and bool(_LEGACY_LIST.fullmatch(text))


def legacy_profiling_options(names: Collection[str], extra: dict[str, str]) -> ProfilingOptions:
    """The switches `names` (older adapters' list form) turned "on", with the keys in `extra` added.

    Every name must be an on/off key (`training_trace`, `task_trace`, ...); anything else is a
    ValueError quoting it."""
    names = [name.strip() for name in names]
    for name in names:
        if name not in _SWITCH_KEYS:
            raise ValueError(f"profiling switch {_q(name)} is not known; allowed: {', '.join(_SWITCH_KEYS)}")
    return ProfilingOptions(tuple({**extra, **{name: "on" for name in names}}.items()))


def format_profiling_options(value: ProfilingOptions) -> str:
    """Canonical text: compact JSON with sorted keys."""
    return json.dumps(dict(value.items), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
