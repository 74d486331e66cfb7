"""The codec between typed options and an `NpuOptimizer` parameter map.

Ascend sess.run-mode scripts pass options by hand:

    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["iterations_per_loop"].i = 10
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")

Here a parameter map in plain Python is a dict `key -> (field, value)` with `field` the AttrValue
field ("b", "i", "s"; "s" values as str). `encode` / `decode` convert between it and option
values; the `*_proto` functions read and write the protobuf form, duck-typed, so that this module
never imports TensorFlow.
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional

from .options import OPTIONS

NPU_OPTIMIZER = "NpuOptimizer"
FIELD_NAMES = {"b": "bool (.b)", "i": "int (.i)", "s": "string (.s)", "f": "float (.f)"}

# Keys Ascend scripts set that mean something only to the Ascend runtime itself.
IGNORED_KEYS = frozenset({"use_off_line"})



def encode(values: Mapping[str, Any]) -> dict:
    """Option values (all or some, by name) -> parameter map."""
    entries: dict = {}
    for name, value in values.items():
        codec = OPTIONS[name].codec
        if codec is not None:
            entries.update(codec.encode(value))
    return entries


def decode(entries: Mapping[str, tuple]) -> dict:
    """Parameter map -> the option values it sets, each validated like a keyword argument.

    Raises ValueError for an entry whose field is not the option's (e.g. `.s` for an int option);
    warns about keys that are not NPURunConfig options.
    """
    known = set(IGNORED_KEYS)
    values = {}
    for name, option in OPTIONS.items():
        codec = option.codec
        if codec is None:
            continue
        keys = codec.keys()
        known.update(keys)
        present = [k for k in keys if k in entries]
        other = dict(getattr(codec, "other_meaning", ()))
        for key in [k for k in present if entries[k][0] in other]:
            warnings.warn(f"NpuOptimizer parameter '{key}' set as {FIELD_NAMES[entries[key][0]]}: "
                          f"{other[entries[key][0]]}", UserWarning, stacklevel=3)
            present.remove(key)
        if not present:
            continue
        for key in present:
            _check_field(codec, key, entries[key])
        values[name] = option.check(codec.decode(entries))
    unknown = sorted(set(entries) - known)
    if unknown:
        warnings.warn(f"NpuOptimizer parameter map: ignoring key(s) that are not NPURunConfig options: "
                      f"{', '.join(unknown)}", UserWarning, stacklevel=3)
    return values


def _check_field(codec, key: str, entry: tuple) -> None:
    expected = _field_of(codec, key)
    field, _ = entry
    if expected is not None and field != expected:
        raise ValueError(f"NpuOptimizer parameter '{key}': set as {FIELD_NAMES.get(field, field)}; "
                         f"it must be set as {FIELD_NAMES[expected]}")


def _field_of(codec, key: str) -> Optional[str]:
    if hasattr(codec, "field"):
        return codec.field
    for option in codec.cls.OPTIONS.values():  # nested configs
        if key in option.codec.keys():
            return option.codec.field
    return None


# ---- the protobuf form ------------------------------------------------------------------------------
def find_npu_optimizer(config_proto) -> Optional[Any]:
    """The NpuOptimizer custom-optimizer entry of a ConfigProto, or None."""
    if config_proto is None:
        return None
    for custom in config_proto.graph_options.rewrite_options.custom_optimizers:
        if custom.name == NPU_OPTIMIZER:
            return custom
    return None


def entries_from_proto(parameter_map) -> dict:
    """A protobuf `parameter_map` (map<string, AttrValue>) -> plain parameter map."""
    entries = {}
    for key in parameter_map:
        attr = parameter_map[key]
        field = attr.WhichOneof("value")
        if field is None:
            continue
        value = getattr(attr, field)
        if field == "s":
            value = value.decode("utf-8")
        entries[key] = (field, value)
    return entries


def entries_to_proto(entries: Mapping[str, tuple], parameter_map) -> None:
    """Write a plain parameter map into a protobuf `parameter_map`."""
    for key, (field, value) in entries.items():
        if field == "s":
            parameter_map[key].s = value.encode("utf-8")
        else:
            setattr(parameter_map[key], field, value)


def options_from_config_proto(config_proto) -> dict:
    """The options set by a ConfigProto's NpuOptimizer entry ({} when it has none)."""
    custom = find_npu_optimizer(config_proto)
    if custom is None:
        return {}
    return decode(entries_from_proto(custom.parameter_map))


def add_npu_optimizer(config_proto, values: Mapping[str, Any]):
    """Add an NpuOptimizer entry holding `values` to `config_proto` (as Ascend scripts do by hand)."""
    custom = config_proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = NPU_OPTIMIZER
    entries_to_proto(encode(values), custom.parameter_map)
    return custom


def strip_npu_optimizer(config_proto) -> None:
    """Remove NpuOptimizer entries, which TensorFlow's grappler would reject as unknown optimizers."""
    rewrite = config_proto.graph_options.rewrite_options
    kept = [c for c in rewrite.custom_optimizers if c.name != NPU_OPTIMIZER]
    if len(kept) != len(rewrite.custom_optimizers):
        copies = [type(c)() for c in kept]
        for copy, original in zip(copies, kept):
            copy.CopyFrom(original)
        del rewrite.custom_optimizers[:]
        for copy in copies:
            rewrite.custom_optimizers.add().CopyFrom(copy)
