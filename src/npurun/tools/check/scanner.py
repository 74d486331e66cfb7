"""One module's part of `npurun check`: an `ast` visitor that resolves the names a module imports and
uses and records a `Finding` for each adapter, TensorFlow, Horovod or import it relies on (see
`check.py` for what is reported and how local modules are followed). NPURunConfig keywords and
parameter_map entries are read by `check_options.py`.
"""
from __future__ import annotations

import ast
import builtins
import os
from dataclasses import replace

from ...adapter import tables as aliases
from . import tensorflow as check_tensorflow
from .conditions import flag_name, apply_argv, dispatch_condition, flag_condition, flag_defaults, module_constants
from .installed import missing_attribute, not_a_package, unknown_keywords
from .module_names import _module_level_names
from .undefined import undefined_reads
from .reach import BY_STRING, dispatched
from .options import global_options_finding, parameter_map_finding, run_config_findings
from .report import Finding

TF_ESTIMATOR_PREFIXES = ("tensorflow.estimator.", "tensorflow.compat.v1.estimator.")
TF_LAYERS_PREFIXES = ("tensorflow.compat.v1.layers.", "tensorflow.layers.")
# Top-level names whose modules npurun's TF1 world gives a script (`import keras` is tf-keras there): not looked
# up in the installed package of that name.
_WORLD_ROOTS = frozenset({"tensorflow", "horovod", "npurun", "keras", "tf_keras", "tensorflow_core",
                          "tensorflow_estimator", "tfdeterminism", "tf_slim"})
_MODULE_NAMES = frozenset({"__name__", "__file__", "__doc__", "__builtins__", "__spec__", "__loader__",
                           "__package__", "__path__", "__annotations__", "__cached__", "__debug__"})
# Builtins Python 3 removed: BERT-style tokenizers name them in branches taken only on Python 2.
_PYTHON2_BUILTINS = frozenset({"unicode", "basestring", "xrange", "long", "unichr", "raw_input", "reload", "file",
                               "execfile", "cmp", "buffer", "apply", "intern", "coerce"})


def _tensorflow_core(name):
    """`tensorflow_core[.x]` (TF 1.15's package of TensorFlow's code, which some scripts import by that name; the TF1
    world gives it as `tensorflow`) -> `tensorflow[.x]`, so that it is judged as that import."""
    if name == "tensorflow_core" or name.startswith("tensorflow_core."):
        return "tensorflow" + name[len("tensorflow_core"):]
    return name


def _canonical(qualified):
    """An adapter module re-exported under another name (`npu_init.util`) -> the module's own name."""
    entry = aliases.lookup(qualified) if qualified else None
    return entry.target if entry is not None and aliases.is_adapter_module(entry) else qualified


def _star_target(module: str, name: str, entry) -> str:
    """What a name brought in by an adapter star import stands for: npu_init's re-exported modules
    (`tf`, `os`) are followed as those modules (so `tf.Session` is checked as TensorFlow 1 API)."""
    target = getattr(entry, "target", "")
    if target == "npurun.adapter.shims:script_tensorflow":  # the TF1 world's tensorflow, else tf.compat.v1
        return "tensorflow" if check_tensorflow.world_available() else "tensorflow.compat.v1"
    if target and ":" not in target and target.split(".")[0] not in (*aliases.ROOTS, "npurun"):
        return target
    return f"{module}.{name}"


def _availability(entry) -> str:
    """'available', 'unsupported' or 'not available yet: <reason>', from the files installed (no import)."""
    if isinstance(entry, aliases.Unsupported):
        return "unsupported"
    if aliases.is_adapter_module(entry):
        return "available"
    return check_tensorflow.target_availability(entry.target)


def _deep_contrib_path_length(rest_parts) -> int:
    """How many parts beyond `tf.contrib.<module>` a use's deep import path takes (`tpu.python.ops.tpu_ops`
    then the name used: 3), so the name used, not an intermediate package, is classified."""
    table = check_tensorflow.contrib_table() if check_tensorflow.world_available() else None
    rest = ".".join(rest_parts)
    paths = (*getattr(table, "PATHS", {}), *getattr(table, "IMPORT_ONLY_PATHS", {}),
             *(module for module in getattr(table, "MODULES", {}) if "." in module))  # (`losses.metric_learning`)
    deep = [path for path in paths if rest.startswith(path + ".") or rest == path]
    return max((path.count(".") for path in deep), default=0)


def _mentions_tpu(test) -> bool:
    """An `if` test about running on a TPU: `FLAGS.use_tpu`, `use_tpu and tpu_name`, `params["use_tpu"]`."""
    for node in ast.walk(test):
        text = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "")
        if "tpu" in text.lower():
            return True
    return False


def _shown(test) -> str:
    source = ast.unparse(test)
    return f"`{source[:77] + '...' if len(source) > 80 else source}`"


def _package_inits(path, root):
    """The `__init__.py` files of the packages above a local module, up to the script's folder."""
    folder = os.path.dirname(path) if os.path.basename(path) != "__init__.py" else os.path.dirname(os.path.dirname(path))
    found = []
    while folder.startswith(root + os.sep) and os.path.isfile(os.path.join(folder, "__init__.py")):
        found.append(os.path.join(folder, "__init__.py"))
        folder = os.path.dirname(folder)
    return found


# The condition of a local module's `if __name__ == '__main__':` block: false where the script imports the module.
_IMPORTED_MAIN = "`__name__ == '__main__'`"


class ModuleScanner(ast.NodeVisitor):
    def __init__(self, project=None, path=None):
        self.aliases: dict = {}  # local name -> qualified name
        self.star_names: dict = {}  # names brought in by `import *` from adapter modules -> qualified name
        self.findings: list = []
        self._seen: dict = {}  # finding key -> index in self.findings
        self._project, self._path = project, path
        self._bound: set = set()  # every name this module binds, in any scope
        self._loaded: dict = {}  # name -> first line it is read
        self._constants: dict = {}  # the module's constants (conditions.module_constants), set by visit_Module
        self._adapter_star = None  # the adapter module of a star import, if any
        self._unknown_star = False  # a star import whose names are not known statically
        self.changes_sys_path = False  # sys.path.append/insert/extend: other modules may become importable
        self.adds_outside_path = False  # a literal absolute path added to sys.path
        self._top_level: set = set()  # names bound at module level (what a star import of this module gives)
        self._all = None  # the module's literal `__all__`, if it has one
        self._tpu_only = 0  # depth of `if use_tpu:` bodies being visited
        self._fallback = 0  # depth of `except` handlers whose `try` body raises nothing check knows of
        self._conditions: list = []  # (flag test, taken with the flags' defaults: True/False/None) of enclosing ifs
        self._own_flags: dict = {}  # flags defined here, when there is no project to share them with
        # For `reach.py` (which functions the run can reach): the function or method being visited (its dotted
        # name: `train`, `Model.build`, `model_fn.host_call_fn`; None at module level or in a class body), the
        # functions this module defines, the names it reads with the condition each read is under, and the
        # function each finding is in.
        self.context = None
        self.defines: dict = {}  # context -> (name, kind "function" / "method" / "class", class name, registered)
        self.references: list = []  # (name read, context, condition or None, names the value is stored in)
        self.finding_contexts: list = []  # aligned with self.findings
        self.imports: list = []  # (local module path, context, condition) of each import of a local module
        self._dispatch: list = []  # texts of enclosing `if` tests on a config dict or a string (not flags)
        self._stored_in = None  # the plain names the value being visited is assigned to
        self._dict_value = 0  # depth of dict literal values being visited (`{'gru': make_gru}` dispatch)
        self._load_states: dict = {}  # name -> [(line, conditions, dispatch, tpu, fallback, context)] of its reads
        self._class_stack: list = []  # (class context, the context the class is defined in) being visited
        self._function_locals: list = []  # per function being visited: the names it assigns (locals shadowing imports)
        self._undefined: dict = {}  # (line, column) -> name of reads nothing binds (undefined.py)
        self._undefined_reads: list = []  # (name, line, conditions, dispatch, tpu, fallback, context, value test)
        self._value_tests: list = []  # texts of enclosing tests on values (not flags or config strings): `if hvd:`
        self._callees: set = set()  # ids of the attribute nodes that are called (`obj.f()`), not just read

    def exported(self) -> dict:
        """What `from this_module import *` gives (as far as check follows names): local name -> qualified
        (None for the module's own functions, classes and variables, which are not adapter/TF names)."""
        own = {name: None for name in self._top_level if name not in self.aliases and name not in self.star_names}
        names = {**self.star_names, **self.aliases, **own}
        if self._all is not None:  # `__all__` decides what a star import brings in
            names = {name: names.get(name) for name in self._all}
        return names

    def visit_Module(self, node):
        self._top_level, self._all = _module_level_names(node.body)
        self.visited = True
        flags = self._flags()
        flags.update(flag_defaults(node))
        apply_argv(flags, getattr(self._project, "argv_flags", None) or {})  # as the script is started
        self._constants = module_constants(node)
        self._undefined = undefined_reads(node)
        self.generic_visit(node)

    # ---- name resolution ---------------------------------------------------------------------------
    def qualified(self, node):
        if isinstance(node, ast.Name):
            if any(node.id in names for names in self._function_locals):
                return None  # DIEN's `tf = open(tpath, 'w')` in a function: that `tf` is a file there
            return _canonical(self.aliases.get(node.id) or self.star_names.get(node.id))
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return _canonical(f"{base}.{node.attr}") if base else None
        return None

    def _flags(self) -> dict:
        """The flags (name -> literal default) the script and its local modules define, shared over the project."""
        if self._project is None:
            return self._own_flags
        if not hasattr(self._project, "flags"):
            self._project.flags = {}
        return self._project.flags

    def add(self, finding: Finding, once_key=None):
        key = once_key or (finding.section, finding.name, finding.line, finding.detail)
        guard = self._guard()
        if (finding.error and guard is None and self._dispatch and not any(taken is False for _, taken in self._conditions)):
            finding = dispatched(finding, self._dispatch[-1])
        if finding.error and guard is not None:
            finding = replace(finding, status=f"{finding.status}, {guard[0]}", detail=f"{finding.detail}; {guard[1]}",
                              error=False)
        elif finding.error and self._conditions:
            not_taken = next((text for text, taken in self._conditions if taken is False), None)
            if not_taken is not None:
                guard = ("flag-only branch", not_taken)
                if not_taken == _IMPORTED_MAIN:
                    how = ("is false here: the script imports this module, so the block runs only when the file is "
                           "itself started as a script")
                elif "--" in not_taken:
                    how = "the flags' defaults do not take: it raises only when the script is started so"
                elif "under npurun run" in not_taken:
                    how = ("the environment npurun run gives it does not take: it raises only if the script is "
                           "started with other values")
                else:
                    how = "the module's constants do not take: it raises only if the script is edited so"
                finding = replace(finding, status=f"{finding.status}, only if {not_taken}",
                                  detail=f"{finding.detail}; the line runs only if {not_taken}, which {how}",
                                  error=False)
            else:
                text, taken = self._conditions[-1]
                finding = replace(finding, detail=f"{finding.detail}; the line runs only if {text}" + (
                    ", which the flags' defaults take" if taken else " (not told from literal defaults)"))
        if key in self._seen:
            index = self._seen[key]
            if finding.error and not self.findings[index].error and guard is None:
                self.findings[index] = finding  # also used where nothing guards it: that use raises
                self.finding_contexts[index] = self.context
            return
        self._seen[key] = len(self.findings)
        self.findings.append(finding)
        self.finding_contexts.append(self.context)

    # ---- code that runs only in a branch TensorFlow 1 scripts do not take here -------------------------
    def _guard(self):
        """(status, why) when the node being visited runs only if something else failed or on a TPU."""
        if self._tpu_only:
            return ("TPU-only branch", "the line is under a `use_tpu` test, which is false without a TPU "
                                       "(flag default / --use_tpu=False): it runs only when asked for a TPU")
        if self._fallback:
            return ("fallback", "the line is in an `except` handler of a `try` whose body works here: it runs "
                                "only if that body fails")
        return None

    def _script_dir(self):
        return os.path.dirname(os.path.abspath(self._path)) if self._path else None

    def _is_imported_main(self, test) -> bool:
        """Whether `test` is `__name__ == '__main__'` in a local module the script imports (not the script)."""
        script = getattr(self._project, "script", None)
        if not (script and self._path and os.path.abspath(self._path) != script):
            return False
        return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and {ast.dump(test.left), ast.dump(test.comparators[0])}
                == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))})

    def visit_If(self, node):
        self.visit(node.test)
        if self._is_imported_main(node.test):  # generate_anchors.py's `from IPython import embed` demo block
            self._conditions.append((_IMPORTED_MAIN, False))
            for statement in node.body:
                self.visit(statement)
            self._conditions.pop()
            for statement in node.orelse:
                self.visit(statement)
            return
        tpu = _mentions_tpu(node.test)
        condition = None if tpu else flag_condition(node.test, self._flags(), self._constants)
        dispatch = None if tpu or condition is not None else dispatch_condition(node.test)
        self._tpu_only += tpu
        if condition is not None:
            self._conditions.append(condition)
        if dispatch is not None:
            self._dispatch.append(dispatch)
        value_test = None if tpu or condition is not None or dispatch is not None else _shown(node.test)
        if value_test is not None:  # `if hvd is not None:`, `if grayscale:`: a value check does not evaluate
            self._value_tests.append(value_test)
        for statement in node.body:
            self.visit(statement)
        self._tpu_only -= tpu
        if condition is not None:
            text, taken = self._conditions.pop()
            self._conditions.append((f"not {text}", None if taken is None else not taken))
        if dispatch is not None:
            self._dispatch[-1] = f"not {dispatch}"
        if value_test is not None:
            self._value_tests[-1] = f"not {value_test}"
        for statement in node.orelse:
            self.visit(statement)
        if condition is not None:
            self._conditions.pop()
        if dispatch is not None:
            self._dispatch.pop()
        if value_test is not None:
            self._value_tests.pop()

    # ---- what the run can reach (see reach.py): definitions, and the names read with their conditions ----
    def _reference_condition(self):
        """Why a name read here may not be read when the script runs (a TPU / fallback branch, a flag branch
        the defaults do not take, a config-dict or string test, a dict of choices), or None."""
        guard = self._guard()
        if guard is not None:
            return guard[0]
        not_taken = next((text for text, taken in self._conditions if taken is False), None)
        if not_taken is not None:
            return not_taken
        if self._dispatch:
            return self._dispatch[-1]
        if self._dict_value:
            return "its key is chosen from a dict of choices"
        return None

    def _reference(self, name):
        self.references.append((name, self.context, self._reference_condition(), self._stored_in))

    def _define(self, node, kind):
        registered = any(not (isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod", "property"))
                         for d in getattr(node, "decorator_list", ()))
        for decorator in getattr(node, "decorator_list", ()):  # `@ops.RegisterGradient("BasicLSTMCell")`
            if (isinstance(decorator, ast.Call) and isinstance(decorator.func, (ast.Attribute, ast.Name))
                    and getattr(decorator.func, "attr", getattr(decorator.func, "id", "")) == "RegisterGradient"
                    and decorator.args and isinstance(decorator.args[0], ast.Constant)):
                registered = f"the graph has a `{decorator.args[0].value}` op whose gradient is taken"
        outer = self.context
        if kind == "class":
            context = node.name if outer is None else f"{outer}.{node.name}"
            self.defines[context] = (node.name, "class", None, registered)
            return context
        owner = self._class_stack[-1] if self._class_stack and outer == self._class_stack[-1][1] else None
        if owner is not None:
            context = f"{owner[0]}.{node.name}"
            self.defines[context] = (node.name, "method", owner[0], registered)
        else:
            context = node.name if outer is None else f"{outer}.{node.name}"
            self.defines[context] = (node.name, "function", None, registered)
        return context

    def visit_IfExp(self, node):
        self.visit(node.test)
        tpu = _mentions_tpu(node.test)
        self._tpu_only += tpu
        text = _shown(node.test)
        self._value_tests.append(text)
        self.visit(node.body)
        self._tpu_only -= tpu
        self._value_tests[-1] = f"not {text}"
        self.visit(node.orelse)
        self._value_tests.pop()

    def visit_BoolOp(self, node):
        # `a and b`: b is evaluated only if a is true (as an `if`, for the reads undefined.py finds)
        self.visit(node.values[0])
        self._value_tests.append(f"{'' if isinstance(node.op, ast.And) else 'not '}{_shown(node.values[0])}")
        for value in node.values[1:]:
            self.visit(value)
        self._value_tests.pop()

    # ---- imports -----------------------------------------------------------------------------------
    def visit_Import(self, node):
        for alias in node.names:
            name = _tensorflow_core(alias.name)
            if alias.asname:
                self.aliases[alias.asname] = name
                self._bound.add(alias.asname)
            else:
                root = alias.name.split(".")[0]
                self.aliases[root] = name.split(".")[0]
                self._bound.add(root)
            alias = ast.alias(name=name, asname=alias.asname)
            self._adapter_module_import(node, alias.name)
            self._generated_module(node, alias.name)
            self._tensorflow_import(node, alias.name, ())
            if self._local_import(alias.name, 0) is None:
                self._installed(node, alias.name)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if not node.level:
            module = _tensorflow_core(module)
        for alias in node.names:
            if alias.name != "*":
                self._generated_module(node, module, alias.name)
        local = self._local_import(module, node.level, [a.name for a in node.names if a.name != "*"])
        if local is None and not node.level:
            self._installed(node, module)
        elif local is not None:
            self._local_names(node, module, local)
        for alias in node.names:
            if alias.name == "*":
                table = aliases.MODULES.get(module) if not node.level else None
                if table is not None:
                    self._adapter_star = module
                    for name, entry in table.names.items():
                        self.star_names[name] = _star_target(module, name, entry)
                elif local is not None:
                    self.star_names.update({k: v for k, v in local.exported().items() if not k.startswith("_")})
                    self._unknown_star = self._unknown_star or local._unknown_star
                    self._adapter_star = self._adapter_star or local._adapter_star
                else:
                    self._unknown_star = True
                    if not node.level:
                        self._adapter_module_import(node, module)
                continue
            self._bound.add(alias.asname or alias.name)
            if node.level:
                continue
            qualified = f"{module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = qualified
            if module.split(".")[0] in aliases.ROOTS:
                if module in aliases.MODULES and qualified not in aliases.MODULES and aliases.lookup(qualified) is None:
                    self._missing_adapter_name(node, module, alias.name, "ImportError")
                elif qualified in aliases.MODULES or aliases.lookup(qualified) is None:
                    self._adapter_module_import(node, qualified if qualified in aliases.MODULES else module)
        if not node.level:
            self._tensorflow_import(node, module, [a.name for a in node.names if a.name != "*"])
            if local is None and not getattr(self, "_guarded", 0):
                for alias in node.names:  # `from scipy.misc import imresize`
                    if alias.name != "*":
                        self._installed_attribute(node, f"{module}.{alias.name}", imported=True)

    def _local_names(self, node, module, local):
        """`from dataset import svhn` where the local package has neither such a submodule nor such a name:
        ImportError (SESEMI_ID1270's folder lacks the dataset modules it imports)."""
        if not getattr(local, "visited", False) or local._unknown_star or getattr(self, "_guarded", 0):
            return
        if "__getattr__" in local._top_level:
            return
        for alias in node.names:
            name = alias.name
            if name == "*" or name in local._top_level or name in local.star_names or name in local.aliases:
                continue
            if self._project.resolve(f"{module}.{name}" if module else name, node.level, self._path) is not None:
                continue
            shown = "." * node.level + module
            self.add(Finding(node.lineno, "imports", f"{shown}.{name}", "not defined",
                             f"the local module {shown} neither defines {name!r} nor has a submodule of that name: "
                             f"ImportError (on Ascend too)", True), once_key=("imports", f"{shown}.{name}"))

    def _local_import(self, module, level, names=()):
        """Scan the local module an import refers to (and `from pkg import sub` submodules); its scanner."""
        if self._project is None:
            return None
        condition = self._reference_condition()
        for name in names:
            sub = self._project.resolve(f"{module}.{name}" if module else name, level, self._path)
            if sub is not None:
                self.imports.append((sub, self.context, condition))
                self._project.scan(sub)
        path = self._project.resolve(module, level, self._path) if module or level else None
        if path is not None:
            self.imports.append((path, self.context, condition))
            for parent in _package_inits(path, self._project.root):  # `import pkg.sub` runs pkg/__init__.py too
                self.imports.append((parent, self.context, condition))
        return self._project.scan(path) if path is not None else None

    def visit_Try(self, node):
        # Imports inside `try:` may be optional (`except ImportError:`): not reported as missing.
        self._guarded = getattr(self, "_guarded", 0) + 1
        before = sum(f.error for f in self.findings)
        for statement in node.body:
            self.visit(statement)
        self._guarded -= 1
        # DCGAN-style `try: tf.nn.conv2d_transpose(...) except AttributeError: tf.nn.deconv2d(...)`: when the
        # body raises nothing check knows of, the handlers are the fallback of an older TensorFlow.
        fallback = int(sum(f.error for f in self.findings) == before)
        self._fallback += fallback
        self._value_tests.append("the `try` body above it raises")
        for handler in node.handlers:
            self.visit(handler)
        self._value_tests.pop()
        self._fallback -= fallback
        for part in (*node.orelse, *node.finalbody):
            self.visit(part)

    visit_TryStar = visit_Try

    def _installed(self, node, module):
        """An import of a module that is neither local, nor an adapter / TensorFlow path, nor installed."""
        top = module.split(".")[0]
        if top and not getattr(self, "_guarded", 0) and self._unbuilt_extension(node, module):
            return
        if (not top or getattr(self, "_guarded", 0) or top in aliases.ROOTS or top in ("tensorflow", "horovod")
                or self._installed_submodule(node, module) or check_tensorflow.module_exists(top)):
            return
        if self._project is not None and os.path.isdir(os.path.join(self._project.root, top)):
            return  # a directory next to the script without __init__.py: a namespace package Python imports
        if top in _world_modules():
            return  # npurun's TF1 world provides it under `npurun run` (`tfdeterminism`)
        if (self._project is not None and self._project.changes_sys_path()
                and not any(scanner.adds_outside_path for scanner in self._project.scanners.values())):
            # The scripts add to sys.path (`sys.path.insert(0, osp.join(root_dir, 'lib'))`): look for it in the
            # script's model folder; what is found there is followed as a local module.
            found = self._project.in_model_folder(top)
            if found:
                for path in found:
                    if os.path.isfile(path):
                        self.imports.append((path, self.context, self._reference_condition()))
                        self._project.scan(path)
                self.add(Finding(node.lineno, "imports", top, "found through sys.path",
                                 f"not next to the script; the scripts add to sys.path, and the model folder has it "
                                 f"({', '.join(os.path.relpath(p, self._project.root) for p in found)}): followed "
                                 f"from there"), once_key=("imports", top))
                return
            self.add(Finding(node.lineno, "imports", top, "not installed",
                             "not next to the script, not installed here, and no folder of the script's model folder "
                             "has it (the scripts add to sys.path, but nothing there can provide it): "
                             "ModuleNotFoundError", True), once_key=("imports", top))
            return
        self.add(Finding(node.lineno, "imports", top, "not installed",
                         "neither a module next to the script nor installed here: ModuleNotFoundError", True),
                 once_key=("imports", top))

    def _generated_module(self, node, module, name=None):
        """`from avod.protos import model_pb2`: a `_pb2` module that is not there but whose `.proto` is, so the
        folder's build step (protoc, usually in its launch script) makes it: ImportError until that runs."""
        dotted = f"{module}.{name}" if name else module
        leaf = dotted.rpartition(".")[2]
        if not leaf.endswith("_pb2") or self._project is None or getattr(self, "_guarded", 0):
            return
        package = dotted.rpartition(".")[0].split(".") if "." in dotted else []
        if node.level:
            bases = [os.path.dirname(os.path.abspath(self._path))]
            for _ in range(node.level - 1):
                bases = [os.path.dirname(bases[0])]
        else:
            bases = [self._project.root, *self._project._package_roots(package[0] if package else leaf)]
        for base in bases:
            folder = os.path.join(base, *package)
            proto = os.path.join(folder, leaf[:-len("_pb2")] + ".proto")
            if os.path.isfile(proto) and not any(os.path.exists(os.path.join(folder, leaf + ext))
                                                 for ext in (".py", ".pyc")):
                self.add(Finding(node.lineno, "imports", dotted, "needs its build step",
                                 f"generated by protoc from {os.path.relpath(proto, self._project.root)}, which is "
                                 f"there, but the module is not: ImportError until the folder's build step (its "
                                 f"launch script's protoc run) makes it", True), once_key=("imports", dotted))
                return

    def _unbuilt_extension(self, node, module) -> bool:
        """`from utils.bbox.nms import nms` where the model has only utils/bbox/nms.pyx (CTPN's make.sh compiles
        it): a Cython source, importable once built; reported when no compiled module sits beside it."""
        if self._project is None:
            return False
        parts = module.split(".")
        for base in (self._project.root, *self._project._package_roots(parts[0], dotted=len(parts) > 1)):
            stem = os.path.join(base, *parts)
            if not os.path.isfile(stem + ".pyx"):
                continue
            try:
                built = any(entry.startswith(parts[-1] + ".") and entry.endswith((".so", ".pyd"))
                            for entry in os.listdir(os.path.dirname(stem)))
            except OSError:
                built = False
            if not built:
                shown = os.path.relpath(stem + ".pyx", self._project.root)
                self.add(Finding(node.lineno, "imports", module, "not built",
                                 f"the model has only {shown}, a Cython source: its build step (the folder's "
                                 f"setup.py / make.sh) compiles it into an extension module; until then "
                                 f"ModuleNotFoundError (on Ascend too)", True), once_key=("imports", module))
            return True
        return False

    def _installed_submodule(self, node, module) -> bool:
        """An import of a path below an installed plain module (TexTING's `scipy.sparse.linalg.eigen.arpack`)."""
        if self._project is not None and self._project.resolve(module.split(".")[0], 0, self._path) is not None:
            return False  # a local module of that name is what the script imports
        found = not_a_package(module)
        if found is None:
            return False
        self.add(Finding(node.lineno, "installed", module, "does not exist", found[1], True),
                 once_key=("installed", module))
        return True

    def _tensorflow_import(self, node, module, names):
        """Imports of TensorFlow paths: removed modules, TF 1 paths the TF1 world provides, tf.contrib."""
        if module.split(".")[0] != "tensorflow":
            return
        if module.startswith("tensorflow.contrib"):
            targets = [module] if not names else [f"{module}.{n}" for n in names]
            if names and check_tensorflow.world_available():
                targets = [t for t in targets if not self._imported_unsupported_name(node, t)]
        elif module.split(".")[1:2] in (["python"], ["core"], ["examples"]):
            result = check_tensorflow.classify_module_path(module, imported_module=True)
            if result is not None:
                self._tensorflow_finding(node, module, result)
                return
            targets = [f"{module}.{n}" for n in names]
        else:
            targets = [f"{module}.{n}" for n in names] if module in ("tensorflow", "tensorflow.compat.v1") else []
        for target in targets:
            self._use(node, target)

    def _imported_unsupported_name(self, node, target) -> bool:
        """`from tensorflow.contrib.seq2seq import dynamic_decode` imports (the TF1 world gives a stand-in that
        raises AdapterAPIError when called, as tacotron2_ID0018 imports it and never calls it): the import is
        listed, not counted; each use of the name is judged where it is."""
        result = check_tensorflow.classify(target, world=True)
        if (result is None or not result[2] or not result[1].startswith("raises AdapterAPIError when used")
                or "not in npurun's tf.contrib table" in result[1]):  # (a module not in the table: the import raises)
            return False
        self.add(Finding(node.lineno, "tensorflow", target, f"{result[0]}, imported",
                         f"importing it works; using it {result[1][len('raises '):]}".replace(
                             "using it AdapterAPIError when used", "using it raises AdapterAPIError"), False),
                 once_key=("tensorflow import", target))
        return True

    def _missing_adapter_name(self, node, module, name, error):
        self.add(Finding(node.lineno, "adapter", f"{module}.{name}", "not provided",
                         f"{module} has no {name!r} here: it is not in npurun's coverage table (docs/compat.md); "
                         f"{error}", True), once_key=("adapter", f"{module}.{name}"))

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
            self._reference(node.id)
            self._loaded.setdefault(node.id, node.lineno)
            where = self._load_states.setdefault(node.id, [])
            if len(where) < 8:  # where it is read, to say under which condition an undefined name is read (finish)
                where.append((node.lineno, tuple(self._conditions), tuple(self._dispatch), self._tpu_only,
                              self._fallback, self.context))
            if (node.lineno, node.col_offset) in self._undefined:
                self._undefined_reads.append((node.id, node.lineno, tuple(self._conditions), tuple(self._dispatch),
                                              self._tpu_only, self._fallback, self.context,
                                              self._value_tests[-1] if self._value_tests else None))
            self._use(node, self.qualified(node))
        else:
            self._bound.add(node.id)

    # ---- names a module binds (for names a star import was expected to provide) ----------------------
    def _bind(self, node):
        self._bound.add(node.name)
        for decorator in node.decorator_list:
            self.visit(decorator)
        for part in ("args", "returns", "bases", "keywords"):
            value = getattr(node, part, None)
            for child in (value if isinstance(value, list) else [value] if value is not None else []):
                self.visit(child)
        context = self._define(node, "class" if isinstance(node, ast.ClassDef) else "function")
        saved = self.context
        if isinstance(node, ast.ClassDef):
            # A class body runs where the class is defined; its methods are contexts of their own.
            self._class_stack.append((context, saved))
        else:
            self.context = context
            self._function_locals.append(_assigned_locals(node))
        for statement in node.body:
            self.visit(statement)
        self.context = saved
        if isinstance(node, ast.ClassDef):
            self._class_stack.pop()
        else:
            self._function_locals.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _bind

    def visit_arg(self, node):
        self._bound.add(node.arg)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        if node.name:
            self._bound.add(node.name)
        self.generic_visit(node)

    def visit_Global(self, node):
        self._bound.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_MatchAs(self, node):
        if getattr(node, "name", None):
            self._bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if getattr(node, "name", None):
            self._bound.add(node.name)

    def finish(self):
        """After the visit: names read but never bound that the adapter's star import was to provide, and
        names read where nothing binds them (undefined.py)."""
        if self._unknown_star:
            return
        known = self._bound | set(self.star_names) | set(self.aliases) | set(dir(builtins)) | _MODULE_NAMES
        self._undefined_names(known)
        if self._adapter_star is None:
            return
        for name, line in sorted(self._loaded.items(), key=lambda item: item[1]):
            if name in _PYTHON2_BUILTINS and name not in known:
                self.add(Finding(line, "adapter", name, "Python 2 name",
                                 "a Python 2 builtin, not an adapter name: NameError on Python 3 (on Ascend too) "
                                 "if that line runs; scripts usually reach it only under six.PY2 / a version "
                                 "check"), once_key=("adapter", name))
            elif name not in known:
                for line, self._conditions, self._dispatch, self._tpu_only, self._fallback, self.context in (
                        self._load_states.get(name) or [(line, (), (), 0, 0, None)]):
                    # each read under the condition it is read under (AlignedReID's `DD` under --mode cmc)
                    self._conditions, self._dispatch = list(self._conditions), list(self._dispatch)
                    self.add(Finding(line, "adapter", name, "not provided",
                                     f"used but never defined here, and `from {self._adapter_star} import *` does "
                                     f"not bring it in: NameError (not in npurun's coverage table, docs/compat.md)",
                                     True), once_key=("adapter", name))
                self._conditions, self._dispatch, self._tpu_only, self._fallback, self.context = [], [], 0, 0, None

    def _undefined_names(self, known):
        """Deep_Speech's `num_gpus`, read in a function whose line that set it is commented out: a NameError where
        the line runs, on Ascend too. Names a star import brings in are bound; a name bound nowhere in a module
        with the adapter's star import is reported as that import's (finish)."""
        brought = set(self.star_names) | set(self.aliases) | self._top_level
        for name, line, conditions, dispatch, tpu, fallback, context, value_test in self._undefined_reads:
            if name in brought or (self._adapter_star is not None and name not in known):
                continue
            self._conditions, self._dispatch, self._tpu_only, self._fallback, self.context = (
                list(conditions), list(dispatch), tpu, fallback, context)
            where = f"in `{context}`" if context else "at the module's top level"
            finding = Finding(line, "names", name, "undefined name",
                              f"read {where}, but neither bound there, nor in a function around it, nor at the "
                              f"module's top level, nor a builtin: NameError when the line runs (outside npurun: "
                              f"on Ascend too)", True)
            if value_test is not None and not any(taken is False for _, taken in self._conditions):
                # Nezha's `Compression.fp16` under `if hvd is not None ...`: a test on a value, not a flag
                finding = replace(finding, status=f"{finding.status}, only if {value_test}",
                                  detail=f"{finding.detail}; the line runs only if {value_test}, a test on values "
                                         f"check does not evaluate", error=False)
            self.add(finding, once_key=("names", name, context))
        self._conditions, self._dispatch, self._tpu_only, self._fallback, self.context = [], [], 0, 0, None

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load) and not self._flag_read(node):
            self._reference(node.attr)
        qualified = self.qualified(node)
        if qualified is not None and self._use(node, qualified):
            return  # the whole dotted name is reported; do not report its parts
        self.generic_visit(node)

    def _flag_read(self, node) -> bool:
        """`FLAGS.predict_all_test` read, not called: a flag's value, not the function of that name handed on
        (SVD_ID2019 calls predict_all_test() only under `if FLAGS.predict_all_test:`). `self.f` and a call
        `obj.f()` stay references."""
        return (id(node) not in self._callees and flag_name(node, self._flags()) is not None
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")))

    def _use(self, node, qualified) -> bool:
        if not qualified:
            return False
        root = qualified.split(".")[0]
        if root in aliases.ROOTS:
            entry = aliases.lookup(qualified)
            if entry is None:
                module, _, name = qualified.rpartition(".")
                if qualified not in aliases.MODULES and module in aliases.MODULES:
                    self._missing_adapter_name(node, module, name, "AttributeError")
                    return True
                return qualified in aliases.MODULES  # a module itself; its members are reported
            status = _availability(entry)
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
        if root == "tensorflow" and not qualified.startswith(TF_ESTIMATOR_PREFIXES + TF_LAYERS_PREFIXES):
            # TensorFlow 1 API through the TF1 world, tf.contrib, TensorFlow 1 module paths
            parts = qualified.split(".")
            if parts[1:4] == ["compat", "v1", "contrib"] and not getattr(self._project, "tf2", False):
                parts = parts[:1] + parts[3:]  # TF 1.15's tf.compat.v1.contrib is tf.contrib (ProtoAttend)
            if parts[1:2] in (["python"], ["core"], ["examples"]):
                # module paths: the whole path decides (uses below a TF 1 path the world provides: that path)
                shown = next((path for path in check_tensorflow.WORLD_PATHS if qualified.startswith(path + ".")),
                             qualified)
            elif parts[1:2] == ["contrib"]:
                shown = ".".join(parts[:4 + _deep_contrib_path_length(parts[2:])])
            else:
                shown = ".".join(parts[:3 + 2 * (parts[1:3] == ["compat", "v1"])])
            result = check_tensorflow.classify(shown, world=True, tf2=getattr(self._project, "tf2", False))
            if result is not None:
                self._tensorflow_finding(node, shown, result)
                return True
            return False
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
        return self._installed_attribute(node, qualified)

    def _installed_attribute(self, node, qualified, imported=False) -> bool:
        """A name read from an installed third-party module that the module does not have (its source says)."""
        root = qualified.split(".")[0]
        if root in aliases.ROOTS or root in _WORLD_ROOTS or "." not in qualified:
            return False
        if self._project is not None and (self._project.resolve(root, 0, self._path) is not None
                                          or os.path.isdir(os.path.join(self._project.root, root))):
            return False  # a local module of that name is what the script imports
        found = missing_attribute(qualified)
        if found is None:
            return False
        module, attribute, why = found
        self.add(Finding(node.lineno, "installed", f"{module}.{attribute}", "does not exist",
                         why.replace("AttributeError / ImportError", "ImportError" if imported else "AttributeError"),
                         True), once_key=("installed", f"{module}.{attribute}"))
        return True

    def _installed_keywords(self, node, qualified):
        """`TSNE(..., n_iter=5000)`: a keyword the installed third-party callable no longer takes (its source says)."""
        root = qualified.split(".")[0]
        if root in aliases.ROOTS or root in _WORLD_ROOTS or root in ("numpy", "os", "sys"):
            return
        if self._project is not None and (self._project.resolve(root, 0, self._path) is not None
                                          or os.path.isdir(os.path.join(self._project.root, root))):
            return
        found = unknown_keywords(qualified, [k.arg for k in node.keywords])
        if found:
            unknown, why = found
            self.add(Finding(node.lineno, "installed", f"{qualified}({unknown[0]}=)", "no such keyword", why, True),
                     once_key=("installed", f"{qualified}({unknown[0]}=)"))

    def _tensorflow_finding(self, node, name, result):
        status, detail, error = result
        finding = Finding(node.lineno, "tensorflow", name, status, detail, error)
        value_test = self._value_tests[-1] if self._value_tests else None
        if (error and status == "error" and "TensorFlow 1's API" in detail and value_test is not None
                and not self._conditions and not self._dispatch and self._guard() is None):
            # EDVR's `tf.random.set_seed` under `if self.random_seed is not None`: a name TensorFlow 1's API
            # lacks raises on Ascend too, so a script that runs there does not take that line; as an
            # undefined name, it is reported under the value test rather than as certain
            finding = replace(finding, status=f"{status}, only if {value_test}",
                              detail=f"{detail}, on Ascend's TensorFlow 1.15 too; the line runs only if "
                                     f"{value_test}, a test on values check does not evaluate", error=False)
        self.add(finding, once_key=("tensorflow", name))

    # ---- NPURunConfig calls and NpuOptimizer parameter maps (read by check_options) -----------------
    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("append", "insert", "extend") and \
                isinstance(func.value, ast.Attribute) and func.value.attr == "path" and \
                isinstance(func.value.value, ast.Name) and func.value.value.id == "sys":
            self.changes_sys_path = True
            if any(isinstance(a, ast.Constant) and isinstance(a.value, str) and os.path.isabs(a.value)
                   for a in node.args):
                self.adds_outside_path = True  # `sys.path.append('/opt/sdk')`: modules may come from anywhere
        if isinstance(func, ast.Attribute):
            self._callees.add(id(func))
        qualified = self.qualified(node.func)
        for finding in run_config_findings(node, qualified, self._script_dir()):
            self.add(finding)
        if qualified and node.keywords:
            self._installed_keywords(node, qualified)
        saved, self._stored_in = self._stored_in, None  # what a call reads runs, wherever its result is stored
        self.generic_visit(node)
        self._stored_in = saved

    def visit_Constant(self, node):
        # `getattr(module, 'make_model')`, `{'model': 'make_model'}`: a function picked by its name as a string
        if isinstance(node.value, str) and node.value.isidentifier():
            self.references.append((node.value, self.context, BY_STRING, self._stored_in))

    def visit_Dict(self, node):
        for key in node.keys:
            if key is not None:
                self.visit(key)
        self._dict_value += 1
        for value in node.values:
            self.visit(value)
        self._dict_value -= 1

    def visit_Assign(self, node):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if len(names) == len(node.targets):  # `host_call = (host_call_fn, [...])`: read only if `host_call` is
            saved, self._stored_in = self._stored_in, tuple(names)
            self.visit(node.value)
            self._stored_in = saved
            for target in node.targets:
                self.visit(target)
            return
        for target in node.targets:
            finding = parameter_map_finding(target, node.value, node.lineno, self._script_dir())
            if finding is None:
                finding = global_options_finding(target, node.value, node.lineno, self.qualified, self._script_dir())
            if finding is not None:
                self.add(finding)
        self.generic_visit(node)


def _assigned_locals(function) -> frozenset:
    """Names a function binds by assignment (`=`, `for`, `with ... as`, augmented and annotated assignments) and
    does not declare global or nonlocal: local variables there, whatever a module-level import calls them. Its
    parameters are not counted (a parameter named as a module is a module handed in, as often as not); nor are
    the bodies of functions and classes nested in it."""
    stored, declared = set(), set()
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    return frozenset(stored - declared)


def _world_modules():
    """Top-level modules other than tensorflow that npurun's TF1 world provides to a script under `npurun run`."""
    from ...tf1 import world

    return {name.split(".")[0] for name in world._EXTRA_MODULES if not name.startswith("tensorflow")}
