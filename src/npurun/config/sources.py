"""Options from outside Python: config files (JSON or YAML) and `name=value` assignments.

Used by the command line; values are YAML scalars (ints, floats, booleans, null, strings), each
given to its option as the value the text means for that option (`_meant`: text options get their
text, `None` is None, `1e3` a number), then validated by NPURunConfig like keyword arguments.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping

from .. import safe_files
from .dump import DumpConfig
from .errors import bounded_repr
from .profiling import ProfilingConfig

_NESTED = {"profiling_config": ProfilingConfig, "dump_config": DumpConfig}
_NOT_IN_FILES = ("session_config", "distribute", "train_distribute", "eval_distribute")


FILE_LIMIT = 1 << 20  # bytes: a config file holds a few dozen options


def _paragraph(text: object) -> str:
    return " ".join(str(text).split())


def _yaml_loader():
    """A SafeLoader that reads numbers as YAML 1.2 does (`010` is 10, `1:30` is text, `0o10` is 8) and
    refuses anchors and aliases (`&a`, `*a`): an option value never needs one, and a few nested
    aliases expand to gigabytes. Built once, on first use (PyYAML is imported only then)."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(
                    None, None, "YAML anchors and aliases (&name, *name) are not allowed in npurun config text",
                    event.start_mark)
            return super().compose_node(parent, index)

        def construct_yaml_int(self, node):
            text = self.construct_scalar(node)
            if len(text) > 40:  # far past int64: every integer option refuses it; int() of 4300+ digits fails
                raise yaml.constructor.ConstructorError(None, None, f"integer of {len(text)} digits is too large",
                                                        node.start_mark)
            if text.lstrip("+-").startswith(("0o", "0x")):
                sign = -1 if text.startswith("-") else 1
                digits = text.lstrip("+-")
                return sign * int(digits[2:], 8 if digits[1] == "o" else 16)
            return int(text, 10)

    # Resolvers: SafeLoader's, with YAML 1.1's int and float forms (octal 010, sexagesimal 1:30,
    # 1_000, 0b1) replaced by the YAML 1.2 core schema's.
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers
                if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:int",
                                 re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:float",
                                 re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))
    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    _LOADER = Loader
    return Loader


_LOADER = None


def yaml_load(text: str):
    """`text` read as YAML by `_yaml_loader()`'s rules; yaml.YAMLError (or RecursionError) on bad text."""
    import yaml

    return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass


def _read_text(path: str) -> str:
    """The file's text, at most FILE_LIMIT bytes of UTF-8 (a FIFO or /dev/zero is not read forever)."""
    where = f"config file {bounded_repr(path)}"
    if path == "":
        raise ValueError("config file '': the path is empty (give --config a JSON or YAML file)")
    if "\x00" in path:
        raise ValueError(f"{where}: the path holds a NUL character")
    try:
        data = safe_files.read_at_most(path, FILE_LIMIT + 1)
    except OSError as err:
        raise ValueError(f"{where}: {err.strerror or err}") from None
    if len(data) > FILE_LIMIT:
        raise ValueError(f"{where}: larger than {FILE_LIMIT} bytes; a config file holds a few options")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: not UTF-8 text (byte {err.start})") from None


def load_file(path: str) -> dict:
    """Options from a JSON or YAML file holding one mapping of option names to values.

    `profiling_config` and `dump_config` may be mappings of their own arguments. Raises ValueError
    naming the file for anything that is not such a mapping, in one paragraph. The file is at most
    FILE_LIMIT bytes; YAML is read with YAML 1.2's numbers and without anchors or aliases.
    """
    text = _read_text(path)
    where = f"config file {bounded_repr(path)}"
    is_json = os.path.splitext(path)[1].lower() == ".json"
    try:
        data = json.loads(text) if is_json else yaml_load(text)
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be read") from None
    except ValueError as err:  # json.JSONDecodeError
        raise ValueError(f"{where}: not valid JSON: {_paragraph(err)}") from None
    except Exception as err:  # noqa: BLE001 - yaml.YAMLError and friends
        raise ValueError(f"{where}: not valid YAML: {_paragraph(err)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValueError(f"{where}: expected a mapping of option names to values")
    return build_nested(data, source=where)


def parse_assignments(assignments: Iterable[str]) -> dict:
    """`["iterations_per_loop=10", "precision_mode=force_fp16"]` -> {name: value}.

    Values are YAML scalars: `10` is an int, `true`/`True` a bool, `null` None, anything else a
    string; an option whose value is text gets the text as typed (`dump_config.dump_step=0` is
    "0", see `build_nested`). Dotted names set fields of the sub-configs: `dump_config.enable_dump=true`.
    """
    import yaml

    options: dict = {}
    typed: dict = {}  # name (or "outer.inner") -> the text as typed, for options whose value is text
    for item in assignments:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--set {bounded_repr(item)}: expected name=value")
        try:
            value = yaml_load(raw) if raw.strip() else ""
        except (yaml.YAMLError, RecursionError):
            value = raw
        if isinstance(value, (dict, list)):
            value = raw  # flow-style text such as "[1,2]" stays text
        typed[name] = raw.strip()
        outer, dot, inner = name.partition(".")
        if dot:
            options.setdefault(outer, {})
            if not isinstance(options[outer], dict):
                raise ValueError(f"--set {bounded_repr(item)}: {bounded_repr(outer)} was already set to a value")
            options[outer][inner] = value
        else:
            options[name] = value
    return build_nested(options, source="--set", typed=typed)


def merge(*layers: Mapping[str, Any]) -> dict:
    """Later layers win; sub-config mappings merge field by field."""
    merged: dict = {}
    for layer in layers:
        for name, value in layer.items():
            if isinstance(value, dict) and isinstance(merged.get(name), dict):
                merged[name] = {**merged[name], **value}
            else:
                merged[name] = value
    return merged


def build_nested(options: Mapping[str, Any], source: str, typed: Mapping[str, str] | None = None) -> dict:
    """Check names that cannot come from text; leave sub-config mappings as mappings; give each option
    the value the text means for it (see `_meant`): its text back where YAML read a number or a
    boolean for an option whose value is text, None for `None`, a number for `1e3`.

    `typed` maps option names (`outer.inner` for sub-config fields) to the text as the user typed it.
    """
    from .options import OPTIONS

    typed = typed or {}
    for name in _NOT_IN_FILES:
        if name in options:
            raise ValueError(f"{source}: option '{name}' takes a Python object and cannot be set from text")
    result = dict(options)
    for name, value in options.items():
        if name in _NESTED and value is not None and not isinstance(value, dict):
            raise ValueError(f"{source}: option '{name}' takes a mapping of "
                             f"{_NESTED[name].__name__} arguments")
        if name in _NESTED and isinstance(value, dict):
            table = _NESTED[name].OPTIONS
            result[name] = {field: (_meant(table[field], v, typed.get(f"{name}.{field}"), _NESTED[name].OWNER)
                                    if field in table else v) for field, v in value.items()}
        elif name in OPTIONS:
            result[name] = _meant(OPTIONS[name], value, typed.get(name), "NPURunConfig")
    return result


def _meant(option, value: Any, typed: str | None, owner: str) -> Any:
    """What a value read from text means for `option` (see `_as_text` and `_as_python`)."""
    if isinstance(value, str):
        return _as_python(option, value, owner)
    return _as_text(option, value, typed, owner)


def _as_python(option, text: str, owner: str) -> Any:
    """Text YAML leaves as text that means a Python value: `None`, as the option rules write it
    (`keep_checkpoint_max=None`), for an option that may be None; and a number YAML 1.1 does not
    read as one (`1e3`, `inf`) for an option that refuses text but takes that number."""
    from .errors import OptionTypeError

    if text == "None" and option.nullable:
        return None
    try:
        option.check(text, owner)
        return text
    except OptionTypeError:
        pass  # text where a number is wanted: try the number below
    except (ValueError, TypeError):
        return text
    for number in (int, float):
        try:
            value = number(text)
            option.check(value, owner)
        except (ValueError, TypeError):
            continue
        return value
    return text


def _as_text(option, value: Any, typed: str | None, owner: str) -> Any:
    """The value to give `option`: YAML reads `0`, `1.5` and `true` as a number or a boolean, but an
    option whose value is text (its parameter-map field is a string, as `dump_step`'s "0|5|10-20",
    `jit_compile`'s "true"; or one that refuses the number's type, as `model_dir`) means the text.
    That text is used when the option accepts it: as typed on the command line, else its plain form
    ("true"/"false" for booleans, so `jit_compile=True` and a file's `jit_compile: true` are "true").
    Otherwise the value stays as read, and its error names it as read."""
    from .errors import OptionTypeError

    if isinstance(value, str) or value is None or not isinstance(value, (bool, int, float)):
        return value
    if getattr(option.codec, "field", None) != "s":
        try:
            option.check(value, owner)
            return value
        except OptionTypeError:
            pass  # a number where text is wanted: try the text below
        except (ValueError, TypeError):
            return value  # the right type and a wrong value: its error is about the value as read
    plain = ("true" if value else "false") if isinstance(value, bool) else str(value)
    for text in dict.fromkeys(t for t in (typed, plain) if t):
        try:
            option.check(text, owner)
        except (ValueError, TypeError):
            continue
        return text
    return value


def construct(options: Mapping[str, Any]):
    """An NPURunConfig from merged text options (sub-config mappings become their classes)."""
    from .run_config import NPURunConfig

    kwargs = {name: (_NESTED[name](**value) if name in _NESTED and isinstance(value, dict) else value)
              for name, value in options.items()}
    return NPURunConfig(**kwargs)
