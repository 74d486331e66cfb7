"""What each option of a configuration does here: rows for `npurun explain` and the docs' table."""
from __future__ import annotations

import json
import shutil
import textwrap
from typing import Iterable

from ..config import onednn as onednn_policy, xla_advice
from ..config.errors import bounded_repr
from ..config.options import OPTIONS
from ..config.table import Configurable


def _show(value) -> str:
    if isinstance(value, Configurable):
        return repr(value)
    if type(value).__name__ == "ConfigProto":
        return "ConfigProto(...)"
    return bounded_repr(value, limit=1000)  # a value of an any-value option may be a huge structure


def _mechanism_here(name: str, option, value, onednn: bool, options=None) -> str:
    """The option's mechanism on this machine: what differs with oneDNN on or off, for
    precision_mode what the mode does on this CPU, and for jit_compile what XLA compiles here
    with the measured advice per model kind (config/xla_advice.py)."""
    mechanism = option.mechanism_here(onednn)
    if name == "jit_compile" and options is not None:
        from ..precision import policy  # plain Python: the GPU guess without TensorFlow

        here = xla_advice.summary_here(value, options.get("iterations_per_loop", 1),
                                       options.get("mix_compile_mode", False), policy.gpu_likely_present())
        return f"{mechanism}; {here}"
    if name != "precision_mode" or option.status_here(value, onednn) != option.status:
        return mechanism  # (a mode that oneDNN's absence makes ineffective has no CPU policy to tell)
    from ..precision import policy  # plain Python: the per-machine rule for low-precision modes

    try:
        here = policy.decide_here(value).summary()
    except ValueError as err:  # a bad NPURUN_FORCE_LOW_PRECISION value
        here = f"here: unknown ({err})"
    return f"{mechanism}; {here}"


def rows(config, onednn: onednn_policy.OneDnn | None = None) -> list[dict]:
    """One row per option: name, value, whether it is the default, kind and mechanism on this
    machine (`onednn`: whether TensorFlow's oneDNN is on here; decided from the environment and
    the CPU when not given)."""
    here = onednn_policy.decide() if onednn is None else onednn
    result = []
    for name, option in OPTIONS.items():
        value = config.options[name]
        result.append({
            "option": name,
            "value": _show(value),
            "default": option.is_default(value) or name not in config.given,
            "kind": option.status_here(value, here.enabled),
            "mechanism": _mechanism_here(name, option, value, here.enabled, config.options),
        })
    return result


def _json_value(value):
    """An option's value as JSON: null, booleans, numbers and text as themselves; a sub-config as an
    object of the fields given to it; a ConfigProto as its JSON form; anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Configurable):
        return {name: _json_value(field) for name, field in value._arguments.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    if type(value).__name__ == "ConfigProto":
        from google.protobuf import json_format

        return json_format.MessageToDict(value)
    return repr(value)


def render_json(config, only_set: bool = False, onednn: onednn_policy.OneDnn | None = None) -> str:
    """The rows as a JSON list; `value` holds the option's value as JSON (see `_json_value`)."""
    result = []
    for row in rows(config, onednn):
        if only_set and row["default"]:
            continue
        result.append(dict(row, value=_json_value(config.options[row["option"]])))
    return json.dumps(result, indent=2)


def _wrap_value(text: str, width: int) -> list[str]:
    """A value over as many lines as it needs (sub-configs break after their commas): never cut."""
    if len(text) <= width:
        return [text]
    lines, line = [], ""
    for piece in text.replace(", ", ",\0").split("\0"):
        while len(piece) > width:  # a single piece longer than the column
            if line:
                lines.append(line)
                line = ""
            lines.append(piece[:width])
            piece = piece[width:]
        if len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
    if line:
        lines.append(line)
    return lines


def render_table(config, only_set: bool = False, width: int | None = None,
                 onednn: onednn_policy.OneDnn | None = None) -> str:
    """A plain-text table that fits the terminal; long values and mechanisms wrap in their column."""
    here = onednn_policy.decide() if onednn is None else onednn
    table = [r for r in rows(config, here) if not (only_set and r["default"])]
    lines = _table_lines(table, width)
    lines.append("")
    lines.append("* set by you (other values are defaults)")
    lines.append(f"TensorFlow's oneDNN here: {'on' if here.enabled else 'off'} ({here.reason}); "
                 f"{onednn_policy.ENV}=0/1 before TensorFlow starts changes it")
    return "\n".join(lines)


def _table_lines(table: list, width: int | None) -> list:
    """The rows as plain-text lines that fit the terminal; long values and mechanisms wrap in their column."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    name_w = max([len("option")] + [len(r["option"]) for r in table])
    value_w = min(28, max([len("value")] + [len(r["value"]) for r in table]))
    kind_w = max([len("kind")] + [len(r["kind"]) for r in table])
    mech_w = max(24, width - name_w - value_w - kind_w - 4 - 6)
    lines = [f"{'option':<{name_w}}  {'value':<{value_w}}    {'kind':<{kind_w}}  mechanism",
             "-" * min(width, name_w + value_w + kind_w + mech_w + 10)]
    for r in table:
        values = _wrap_value(r["value"], value_w)
        marker = "  " if r["default"] else " *"
        mech = textwrap.wrap(r["mechanism"], mech_w) or [""]
        lines.append(f"{r['option']:<{name_w}}  {values[0]:<{value_w}}{marker}  {r['kind']:<{kind_w}}  {mech[0]}")
        for index in range(1, max(len(values), len(mech))):
            value = values[index] if index < len(values) else ""
            more = mech[index] if index < len(mech) else ""
            lines.append(f"{'':<{name_w}}  {value:<{value_w}}    {'':<{kind_w}}  {more}".rstrip())
    return lines


def markdown_table(options: Iterable = None) -> str:
    """The option reference for the README, generated from the option table."""
    lines = ["| option | default | rule | kind here | mechanism |", "|---|---|---|---|---|"]
    for name, option in OPTIONS.items():
        cells = [f"`{name}`", f"`{option.default!r}`", option.rule, option.status, option.mechanism]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


# --- npu_device (the adapter's TensorFlow 2 package): the rows of npu_device.global_options() ----------------

def npu_device_options(file_options: dict, assignments) -> object:
    """A `global_options()` (NpuConfig) with the options of a --config mapping (nested or dotted names) and
    `--set` assignments applied, each validated as the script's assignment would be; then all checked together
    as `npu_device.open()` checks them. ValueError / TypeError name the option (plain Python: no TensorFlow)."""
    from ..adapter.npu_device import configs, runtime
    from ..config import sources

    options = configs.new_config()

    def assign(name, value, typed=None):
        *groups, leaf = name.split(".")
        target = options
        for group in groups:
            target = getattr(target, group) if group in dir(target) else None
            if not isinstance(target, configs.NpuBaseConfig):
                raise ValueError(f"{configs.OWNER} has no option group {group!r} (in {name!r})")
        slot = target._slots.get(leaf)  # noqa: SLF001 - the option row, to read text as NPURunConfig does
        if slot is not None and not isinstance(slot, configs.NpuBaseConfig):
            value = sources._meant(slot.option, value, typed, configs.OWNER)  # noqa: SLF001
        setattr(target, leaf, value)

    def walk(mapping, prefix=""):
        for name, value in mapping.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{name}.")
            else:
                assign(prefix + name, value)

    walk(file_options)
    import yaml

    for item in assignments:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--set {bounded_repr(item)}: expected name=value")
        try:
            value = sources.yaml_load(raw) if raw.strip() else ""
        except (yaml.YAMLError, RecursionError):
            value = raw
        assign(name.strip(), raw if isinstance(value, (dict, list)) else value, raw.strip())
    runtime.validated(options)
    return options


def npu_device_rows(options) -> list[dict]:
    """One row per global_options() attribute: its value, whether the script set it, its kind under TensorFlow 2
    and what it does, or why it does nothing (the reason npu_device.open() warns with: the option table's)."""
    from ..adapter.npu_device import configs

    result = []
    for name, option, value, was_set in options.items():
        status, why = configs.kind_here(name, option)
        if name in configs.TF2_DEFAULTS:
            why = f"{why} (default: {configs.TF2_DEFAULTS[name][1]})"
        result.append({"option": name, "value": _show(value), "default": not was_set or option.is_default(value),
                       "kind": status, "mechanism": why})
    return result


def render_npu_device(options, only_set: bool = False, fmt: str = "table", width: int | None = None) -> str:
    table = [r for r in npu_device_rows(options) if not (only_set and r["default"])]
    if fmt == "json":
        values = {name: value for name, _o, value, _s in options.items()}
        return json.dumps([dict(r, value=_json_value(values[r["option"]])) for r in table], indent=2)
    lines = _table_lines(table, width)
    lines.append("")
    lines.append("* set by you (other values are the TF 2 adapter's defaults)")
    lines.append("npu_device (TensorFlow 2): options are npu_device.global_options() attributes; what TensorFlow 2's "
                 "runtime cannot honour is 'accepted, no effect here' with the reason npu_device.open() warns with")
    return "\n".join(lines)
