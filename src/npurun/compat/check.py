"""`npurun check script.py`: what a script asks of the NPU adapter, and what each thing does here.

A static report (the script is parsed with `ast`, never run) of:

- every `NPURunConfig(...)` / `tf.estimator.RunConfig(...)` keyword argument: the option's status here
  (`effect`, `effect (GPU only)`, `accepted, no effect here`, `not supported`, `not implemented yet`) and
  mechanism from `npurun.config.OPTIONS`; literal values are validated as NPURunConfig would;
- every `custom_op.parameter_map["key"]` entry of a hand-written `NpuOptimizer` ConfigProto: the option
  it sets (field and literal value checked as NPURunConfig checks them), or that it is ignored;
- every adapter name the script uses (`npu_bridge...`, `hccl...`, including names brought in by
  `from npu_bridge.npu_init import *`), with its coverage-table status and whether its npurun target
  is available in this installation;
- TensorFlow names that TensorFlow 2.21 lacks (`tf.estimator.*`, `tf.compat.v1.layers.*`): provided
  by `npurun run`, or not at all;
- Horovod calls (`npurun migrate` rewrites the common ones).

Exit status 1 when something the script uses will raise here (an unsupported or unavailable name, an
unknown option, an invalid literal value), else 0.
"""
from __future__ import annotations

import ast
import json
import warnings
from dataclasses import asdict, dataclass

from ..config import OPTIONS, param_map
from . import aliases

TF_ESTIMATOR_PREFIXES = ("tensorflow.estimator.", "tensorflow.compat.v1.estimator.")
TF_LAYERS_PREFIXES = ("tensorflow.compat.v1.layers.",)
RUN_CONFIG_TARGETS = {"npurun.NPURunConfig", "npurun.config.NPURunConfig", "tensorflow.estimator.NPURunConfig",
                      "tensorflow.compat.v1.estimator.NPURunConfig"} | {
    f"{module.name}.NPURunConfig" for module in aliases.MODULES.values() if "NPURunConfig" in module.names}
TF_RUN_CONFIGS = {"tensorflow.estimator.RunConfig", "tensorflow.compat.v1.estimator.RunConfig"}


@dataclass(frozen=True)
class Finding:
    line: int
    section: str  # "option", "parameter_map", "adapter", "tensorflow", "horovod"
    name: str
    status: str
    detail: str
    error: bool = False


def _option_key_map() -> dict:
    keys = {}
    for name, option in OPTIONS.items():
        if option.codec is not None:
            for key in option.codec.keys():
                keys[key] = name
    return keys


def _canonical(qualified):
    """An adapter module re-exported under another name (`npu_init.util`) -> the module's own name."""
    entry = aliases.lookup(qualified) if qualified else None
    return entry.target if entry is not None and aliases.is_adapter_module(entry) else qualified


def _literal(node):
    """The Python value of a literal (also `tf.compat.as_bytes("x")` / `b"x"`), or raise ValueError."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
            isinstance(node.func, (ast.Attribute, ast.Name)) and \
            (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in ("as_bytes", "str", "as_str"):
        node = node.args[0]
    value = ast.literal_eval(node)
    return value.decode("utf-8") if isinstance(value, bytes) else value


class _Scanner(ast.NodeVisitor):
    def __init__(self):
        self.aliases: dict = {}  # local name -> qualified name
        self.star_names: dict = {}  # names brought in by `import *` from adapter modules -> qualified name
        self.findings: list = []
        self._seen: set = set()
        self._option_keys = _option_key_map()

    # ---- name resolution ---------------------------------------------------------------------------
    def qualified(self, node):
        if isinstance(node, ast.Name):
            return _canonical(self.aliases.get(node.id) or self.star_names.get(node.id))
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return _canonical(f"{base}.{node.attr}") if base else None
        return None

    def add(self, finding: Finding, once_key=None):
        key = once_key or (finding.section, finding.name, finding.line, finding.detail)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(finding)

    # ---- imports -----------------------------------------------------------------------------------
    def visit_Import(self, node):
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = root
            self._adapter_module_import(node, alias.name)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:
            return
        for alias in node.names:
            if alias.name == "*":
                table = aliases.MODULES.get(module)
                if table is not None:
                    for name in table.names:
                        self.star_names[name] = f"{module}.{name}"
                else:
                    self._adapter_module_import(node, module)
                continue
            qualified = f"{module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = qualified
            if module.split(".")[0] in aliases.ROOTS:
                if qualified in aliases.MODULES or aliases.lookup(qualified) is None:
                    self._adapter_module_import(node, qualified if qualified in aliases.MODULES else module)

    def _adapter_module_import(self, node, module):
        if module.split(".")[0] not in aliases.ROOTS:
            return
        if module in aliases.MODULES:
            return
        entry = aliases.unsupported_module(module)
        why = entry.why if entry else "not in npurun's coverage table (docs/compat.md)"
        self.add(Finding(node.lineno, "adapter", module, "unsupported", f"importing it raises: {why}", True))

    # ---- uses --------------------------------------------------------------------------------------
    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self._use(node, self.qualified(node))

    def visit_Attribute(self, node):
        qualified = self.qualified(node)
        if qualified is not None and self._use(node, qualified):
            return  # the whole dotted name is reported; do not report its parts
        self.generic_visit(node)

    def _use(self, node, qualified) -> bool:
        if not qualified:
            return False
        root = qualified.split(".")[0]
        if root in aliases.ROOTS:
            entry = aliases.lookup(qualified)
            if entry is None:
                return qualified in aliases.MODULES  # a module itself; its members are reported
            status = aliases.availability(entry)
            error = status != "available"
            detail = aliases.describe(entry)
            if isinstance(entry, aliases.NoEffect):
                detail += " (warns once when used)"
            self.add(Finding(node.lineno, "adapter", qualified, entry.status if not error or status == "unsupported"
                             else status, detail, error), once_key=("adapter", qualified))
            return True
        if root == "horovod":
            self.add(Finding(node.lineno, "horovod", qualified, "not supported",
                             "Horovod is not used here; `npurun migrate` rewrites rank()/size()/init()/"
                             "DistributedOptimizer/BroadcastGlobalVariablesHook to npurun.distribute"),
                     once_key=("horovod", qualified))
            return True
        for prefixes, table in ((TF_ESTIMATOR_PREFIXES, aliases.TF_ESTIMATOR), (TF_LAYERS_PREFIXES, aliases.TF_LAYERS)):
            for prefix in prefixes:
                if qualified.startswith(prefix):
                    member = qualified[len(prefix):].split(".")[0]
                    entry = table.get(member)
                    public = prefix + member
                    if entry is None or isinstance(entry, aliases.Unsupported):
                        why = entry.why if entry else "not provided by npurun's compatibility layer"
                        self.add(Finding(node.lineno, "tensorflow", public, "unsupported",
                                         f"TensorFlow 2.21 lacks it and npurun does not provide it: {why}", True),
                                 once_key=("tensorflow", public))
                    else:
                        self.add(Finding(node.lineno, "tensorflow", public, "provided by `npurun run`",
                                         f"TensorFlow 2.21 lacks it; under `npurun run` it is "
                                         f"{aliases.describe(entry)}"), once_key=("tensorflow", public))
                    return True
        return False

    # ---- NPURunConfig calls ------------------------------------------------------------------------
    def visit_Call(self, node):
        qualified = self.qualified(node.func)
        if qualified in RUN_CONFIG_TARGETS or (qualified is None and isinstance(node.func, ast.Name)
                                               and node.func.id == "NPURunConfig"):
            self._run_config(node, tf_run_config=False)
        elif qualified in TF_RUN_CONFIGS:
            self._run_config(node, tf_run_config=True)
        self.generic_visit(node)

    def _run_config(self, node, tf_run_config: bool):
        owner = "tf.estimator.RunConfig" if tf_run_config else "NPURunConfig"
        if node.args and not tf_run_config:
            self.add(Finding(node.lineno, "option", "(positional)", "error",
                             "NPURunConfig takes keyword arguments only (TypeError)", True))
        for keyword in node.keywords:
            if keyword.arg is None:
                self.add(Finding(node.lineno, "option", "**", "unchecked",
                                 f"options passed to {owner} with ** are not checked"))
                continue
            option = OPTIONS.get(keyword.arg)
            if option is None:
                if tf_run_config:
                    self.add(Finding(keyword.value.lineno, "option", keyword.arg, "dropped",
                                     "NPURunConfig does not accept it: `npurun run` drops it with a warning and "
                                     "`npurun migrate` removes it"))
                else:
                    self.add(Finding(keyword.value.lineno, "option", keyword.arg, "error",
                                     "not an NPURunConfig option (TypeError at construction)", True))
                continue
            self._option(keyword.value, keyword.arg, option)

    def _option(self, value_node, name, option):
        detail = option.mechanism
        error = False
        try:
            value = _literal(value_node)
        except (ValueError, TypeError, SyntaxError):
            value = None
            shown = "(not a literal: not checked)"
        else:
            shown = repr(value)
            try:
                option.check(value)
            except (ValueError, TypeError) as invalid:
                error, detail = True, f"invalid value: {invalid}"
            else:
                if option.is_default(value):
                    detail = f"(the default value) {detail}"
        self.add(Finding(value_node.lineno, "option", f"{name}={shown}", option.status, detail, error))

    # ---- NpuOptimizer parameter maps ---------------------------------------------------------------
    def visit_Assign(self, node):
        for target in node.targets:
            self._parameter_map_entry(target, node.value, node.lineno)
        self.generic_visit(node)

    def _parameter_map_entry(self, target, value_node, line):
        # custom_op.parameter_map["key"].<field> = value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Subscript)):
            return
        subscript = target.value
        if not (isinstance(subscript.value, ast.Attribute) and subscript.value.attr == "parameter_map"):
            return
        try:
            key = ast.literal_eval(subscript.slice)
        except ValueError:
            self.add(Finding(line, "parameter_map", "(computed key)", "unchecked", "key is not a literal"))
            return
        field = target.attr
        if key in param_map.IGNORED_KEYS:
            self.add(Finding(line, "parameter_map", key, "ignored", "meaningful to the Ascend runtime only"))
            return
        name = self._option_keys.get(key)
        if name is None:
            self.add(Finding(line, "parameter_map", key, "ignored",
                             "not an NPURunConfig option: NPURunConfig ignores it with a warning"))
            return
        option = OPTIONS[name]
        detail, error = option.mechanism, False
        label = key if key == name else f"{key} (option {name})"
        try:
            raw = _literal(value_node)
        except (ValueError, TypeError, SyntaxError):
            raw = None
        if raw is not None and hasattr(option.codec, "field"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    param_map.decode({key: (field, raw)})
                except (ValueError, TypeError) as invalid:
                    error, detail = True, f"invalid: {invalid}"
        self.add(Finding(line, "parameter_map", f"{label} .{field} = {raw!r}", option.status, detail, error))


def check_source(source: str, filename: str = "<script>") -> list:
    """The findings for one script, in line order."""
    tree = ast.parse(source, filename=filename)
    scanner = _Scanner()
    scanner.visit(tree)
    return sorted(scanner.findings, key=lambda f: (f.line, f.section, f.name))


SECTIONS = (("option", "NPURunConfig / RunConfig options"),
            ("parameter_map", "NpuOptimizer parameter_map entries"),
            ("adapter", "Ascend adapter APIs"),
            ("tensorflow", "TensorFlow APIs that TensorFlow 2.21 lacks"),
            ("horovod", "Horovod"))


def render_text(findings, filename: str) -> str:
    lines = [f"npurun check: {filename}"]
    for section, title in SECTIONS:
        rows = [f for f in findings if f.section == section]
        if not rows:
            continue
        lines.append("")
        lines.append(f"{title}:")
        for f in rows:
            mark = "!" if f.error else " "
            lines.append(f" {mark} line {f.line}: {f.name} -- {f.status}: {f.detail}")
    errors = [f for f in findings if f.error]
    lines.append("")
    lines.append(f"{len(findings)} finding(s); {len(errors)} will raise here" + (
        " (marked !)" if errors else ""))
    return "\n".join(lines)


def render_json(findings, filename: str) -> str:
    return json.dumps({"script": filename, "findings": [asdict(f) for f in findings]}, indent=2)


def check_file(path: str) -> list:
    with open(path, encoding="utf-8") as handle:
        return check_source(handle.read(), path)
