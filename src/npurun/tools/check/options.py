"""`npurun check`'s reading of options: `NPURunConfig(...)` / `tf.estimator.RunConfig(...)` keyword
arguments and hand-written `custom_op.parameter_map["key"]` entries of an NpuOptimizer ConfigProto,
each a `Finding` with the option's status and mechanism from `npurun.config.OPTIONS`; literal values
are checked as NPURunConfig checks them (TensorFlow is not imported).
"""
from __future__ import annotations

import ast
import functools
import os
import warnings

from ...config import OPTIONS, param_map
from ...adapter import tables as aliases
from .report import Finding

RUN_CONFIG_TARGETS = {"npurun.NPURunConfig", "npurun.config.NPURunConfig", "tensorflow.estimator.NPURunConfig",
                      "tensorflow.compat.v1.estimator.NPURunConfig"} | {
    f"{module.name}.NPURunConfig" for module in aliases.MODULES.values() if "NPURunConfig" in module.names}
TF_RUN_CONFIGS = {"tensorflow.estimator.RunConfig", "tensorflow.compat.v1.estimator.RunConfig"}


@functools.lru_cache(maxsize=None)
def _option_key_map() -> dict:
    keys = {}
    for name, option in OPTIONS.items():
        if option.codec is not None:
            for key in option.codec.keys():
                keys[key] = name
    return keys


def literal(node):
    """The Python value of a literal (also `tf.compat.as_bytes("x")` / `b"x"`), or raise ValueError."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
            isinstance(node.func, (ast.Attribute, ast.Name)) and \
            (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in ("as_bytes", "str", "as_str"):
        node = node.args[0]
    value = ast.literal_eval(node)
    return value.decode("utf-8") if isinstance(value, bytes) else value


def run_config_findings(node: ast.Call, qualified, script_dir=None) -> list:
    """The findings of one call (`qualified`: the callee's resolved name, or None): one per keyword
    when it builds an NPURunConfig or a tf.estimator.RunConfig, else none."""
    if qualified in RUN_CONFIG_TARGETS or (qualified is None and isinstance(node.func, ast.Name)
                                           and node.func.id == "NPURunConfig"):
        return _run_config(node, tf_run_config=False, script_dir=script_dir)
    if qualified in TF_RUN_CONFIGS:
        return _run_config(node, tf_run_config=True, script_dir=script_dir)
    return []


def _run_config(node, tf_run_config: bool, script_dir=None) -> list:
    found = []
    owner = "tf.estimator.RunConfig" if tf_run_config else "NPURunConfig"
    if node.args and not tf_run_config:
        found.append(Finding(node.lineno, "option", "(positional)", "error",
                             "NPURunConfig takes keyword arguments only (TypeError)", True))
    for keyword in node.keywords:
        if keyword.arg is None:
            found.append(Finding(node.lineno, "option", "**", "unchecked",
                                 f"options passed to {owner} with ** are not checked"))
            continue
        option = OPTIONS.get(keyword.arg)
        if option is None:
            if tf_run_config:
                found.append(Finding(keyword.value.lineno, "option", keyword.arg, "dropped",
                                     "NPURunConfig does not accept it: `npurun run` drops it with a warning and "
                                     "`npurun migrate` removes it"))
            else:
                found.append(Finding(keyword.value.lineno, "option", keyword.arg, "error",
                                     "not an NPURunConfig option (TypeError at construction)", True))
            continue
        found.append(_option(keyword.value, keyword.arg, option, script_dir))
    return found


def _next_to_script(value, script_dir) -> bool:
    """A relative path (a mixed-precision list, a fusion switch file) that exists next to the script or from
    one of the three folders above it: the launch scripts cd there first (GRU4Rec's './ops_info.json' next to
    the script; EfficientNet's './efficientnet/ReduceMeanD.json' from the model folder above `efficientnet/`)."""
    if not isinstance(value, str) or not value or os.path.isabs(value) or script_dir is None:
        return False
    folder = script_dir
    for _ in range(4):
        if os.path.exists(os.path.join(folder, value)):
            return True
        folder = os.path.dirname(folder)
    return False


def _option(value_node, name, option, script_dir=None) -> Finding:
    detail = option.mechanism
    error = False
    try:
        value = literal(value_node)
    except (ValueError, TypeError, SyntaxError):
        value = None
        shown = "(not a literal: not checked)"
    else:
        shown = repr(value)
        try:
            option.check(value)
        except (ValueError, TypeError) as invalid:
            kind = "TypeError" if isinstance(invalid, TypeError) else "ValueError"  # as NPURunConfig raises it
            error, detail = True, f"invalid value ({kind}): {invalid}"
            if _next_to_script(value, script_dir):
                error, detail = False, (f"{option.mechanism}; {value!r} does not exist from here, but does next "
                                        f"to the script or above it: valid when it runs from that directory")
        else:
            if option.is_default(value):
                detail = f"(the default value) {detail}"
    return Finding(value_node.lineno, "option", f"{name}={shown}", option.status, detail, error)


def parameter_map_finding(target, value_node, line, script_dir=None):
    """The finding of an assignment to `target` when it is `custom_op.parameter_map["key"].<field>`, else None."""
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Subscript)):
        return None
    subscript = target.value
    if not (isinstance(subscript.value, ast.Attribute) and subscript.value.attr == "parameter_map"):
        return None
    try:
        key = ast.literal_eval(subscript.slice)
    except ValueError:
        return Finding(line, "parameter_map", "(computed key)", "unchecked", "key is not a literal")
    field = target.attr
    if key in param_map.IGNORED_KEYS:
        return Finding(line, "parameter_map", key, "ignored", "meaningful to the Ascend runtime only")
    name = _option_key_map().get(key)
    if name is None:
        return Finding(line, "parameter_map", key, "ignored",
                       "not an NPURunConfig option: NPURunConfig ignores it with a warning")
    option = OPTIONS[name]
    detail, error = option.mechanism, False
    label = key if key == name else f"{key} (option {name})"
    try:
        raw = literal(value_node)
    except (ValueError, TypeError, SyntaxError):
        raw = None
    other = dict(getattr(option.codec, "other_meaning", ()))
    if field in other:  # the adapter's bool `jit_compile`: not npurun's option of that name
        return Finding(line, "parameter_map", f"{key} .{field} = {raw!r}", "accepted, no effect here", other[field])
    # what the AttrValue field holds after the assignment: protobuf turns an int given to the bool field
    # into a bool and an int given to the float field into a float (`.b = 1`, 6 ModelZoo folders)
    if field == "b" and type(raw) is int:
        raw = bool(raw)
    elif field == "f" and type(raw) is int:
        raw = float(raw)
    if raw is not None and hasattr(option.codec, "field"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                param_map.decode({key: (field, raw)})
            except (ValueError, TypeError) as invalid:
                error, detail = True, f"invalid: {invalid}"
                if _next_to_script(raw, script_dir):
                    error, detail = False, (f"{option.mechanism}; {raw!r} does not exist from here, but does next "
                                            f"to the script or above it: valid when it runs from that directory, "
                                            f"as its launch script runs it")
    return Finding(line, "parameter_map", f"{label} .{field} = {raw!r}", option.status, detail, error)


GLOBAL_OPTIONS_TARGETS = {"npu_device.global_options", "npu_device.npu_device.global_options"}


@functools.lru_cache(maxsize=None)
def _npu_device_options() -> dict:
    """Dotted global_options() attribute -> Option, and the groups (dotted name -> None)."""
    from ...adapter.npu_device import configs

    table = {}
    for name, option, _value, _set in configs.new_config().items():
        table[name] = option
        parts = name.split(".")
        for i in range(1, len(parts)):
            table.setdefault(".".join(parts[:i]), None)
    return table


def global_options_finding(target, value_node, line, qualified, script_dir=None):
    """The finding of `npu_device.global_options().<a>.<b> = value` (qualified: the scanner's name
    resolver), checked as the attribute assignment checks it at run time; None for other targets."""
    from ...adapter.npu_device import configs

    attrs, node = [], target
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not attrs or not isinstance(node, ast.Call) or qualified(node.func) not in GLOBAL_OPTIONS_TARGETS:
        return None
    name = ".".join(reversed(attrs))
    table = _npu_device_options()
    if name not in table:
        return Finding(line, "option", f"global_options().{name}", "error",
                       "not an option of npu_device.global_options() (ValueError when set)", True)
    option = table[name]
    if option is None:
        return Finding(line, "option", f"global_options().{name}", "error",
                       "a group of options: set its attributes (ValueError when set)", True)
    finding = _option(value_node, f"global_options().{name}", option, script_dir)
    status, why = configs.kind_here(name, option)
    detail = finding.detail if finding.error else finding.detail.replace(option.mechanism, why)
    return Finding(finding.line, finding.section, finding.name, status, detail, finding.error)
