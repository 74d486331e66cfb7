"""`npurun migrate`: rewrite a classic tf.estimator (and Horovod) script into npurun's NPU form.

The rewrite follows the product document's migration example (NPURunConfig constructor,
save_checkpoints_steps):

    tf.estimator.Estimator(model_fn=..., config=tf.estimator.RunConfig(
        save_checkpoints_steps=50 if hvd.rank() == 0 else None, keep_checkpoint_max=1))
  becomes
    NPUEstimator(model_fn=..., config=NPURunConfig(
        save_checkpoints_steps=50 if get_rank_id() == 0 else 0, keep_checkpoint_max=1))

Rewrites (each one reported with its line):

- `tf.estimator.RunConfig` / `tf.compat.v1.estimator.RunConfig` (however imported) -> `NPURunConfig`;
  positional arguments become keywords (NPURunConfig takes keywords only); arguments NPURunConfig
  does not accept (`device_fn`, `protocol`, `experimental_distribute`, ...) are removed with a note;
  accepted arguments that do nothing here are noted with their status;
- `tf.estimator.Estimator` -> `NPUEstimator` (a fifth positional argument becomes `warm_start_from=`);
- `tf.estimator.EstimatorSpec`, `ModeKeys`, `TrainSpec`, `EvalSpec`, `train_and_evaluate` -> the same
  names from npurun;
- `hvd.rank()`, `hvd.size()`, `hvd.local_rank()`, `hvd.local_size()` -> `get_rank_id()`,
  `get_rank_size()`, `get_local_rank_id()`, `get_local_rank_size()`; `hvd.init()` is removed (the
  collectives initialise themselves); `hvd.DistributedOptimizer(opt)` -> `NPUDistributedOptimizer(opt)`;
  `hvd.BroadcastGlobalVariablesHook(root)` -> `NPUBroadcastGlobalVariablesHook(root, get_rank_id())`;
  the Horovod import is removed once nothing uses it;
- the "save on rank 0 only" pattern in `save_checkpoints_steps`: `x if rank() == 0 else None` ->
  `... else 0` (for NPURunConfig None means "every 100 steps" and 0 disables saving);
- a `tf.estimator.RunConfig` without `save_summary_steps` gets `save_summary_steps=100`, the value
  tf.estimator used, since NPURunConfig's default (0) writes no TensorBoard summaries;
- so that the migrated script runs under plain `python`: `tf.estimator.inputs.numpy_input_fn` ->
  npurun's, `tf.estimator.export.ServingInputReceiver` / `build_raw_serving_input_receiver_fn` /
  `build_parsing_serving_input_receiver_fn` / `PredictOutput` -> npurun.estimator's, and
  `tf.layers.X` / `tf.compat.v1.layers.X` -> `npu_layers.X` (`from npurun.tf1 import layers as
  npu_layers`: TF 2.21's Keras 3 has no tf.compat.v1.layers) for the layers npurun provides;
- arguments on continuation lines aligned with a renamed call's parenthesis move with it.

The needed `from npurun import ...` / `from npurun.distribute import ...` lines are added. What it
cannot migrate is reported, and left as it was. Running it on its own output changes nothing.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import PositionProvider, QualifiedNameProvider

from ..config import OPTIONS
from ..names.coverage import Unsupported
from ..tf_estimator.table import TF_ESTIMATOR
from ..tf_estimator import TF_RUN_CONFIG_PARAMETERS

ESTIMATOR_MODULES = ("tensorflow.estimator", "tensorflow.compat.v1.estimator", "tensorflow.compat.v2.estimator")
# tf.estimator name -> (module to import from, name)
ESTIMATOR_RENAMES = {
    "RunConfig": ("npurun", "NPURunConfig"),
    "NPURunConfig": ("npurun", "NPURunConfig"),  # the product document's migrated example spells it so
    "Estimator": ("npurun", "NPUEstimator"),
    "EstimatorSpec": ("npurun", "EstimatorSpec"),
    "ModeKeys": ("npurun", "ModeKeys"),
    "TrainSpec": ("npurun", "TrainSpec"),
    "EvalSpec": ("npurun", "EvalSpec"),
    "train_and_evaluate": ("npurun", "train_and_evaluate"),
}
# deeper tf.estimator names (member path below the estimator module) -> (module, name)
ESTIMATOR_DEEP_RENAMES = {
    "inputs.numpy_input_fn": ("npurun.tf_estimator", "numpy_input_fn"),
    "export.ServingInputReceiver": ("npurun.estimator", "ServingInputReceiver"),
    "export.build_raw_serving_input_receiver_fn": ("npurun.estimator", "build_raw_serving_input_receiver_fn"),
    "export.build_parsing_serving_input_receiver_fn": ("npurun.estimator", "build_parsing_serving_input_receiver_fn"),
    "export.PredictOutput": ("npurun.estimator", "PredictOutput"),
}
LAYER_MODULES = ("tensorflow.layers", "tensorflow.compat.v1.layers")
NPU_LAYERS = ("dense", "conv2d", "max_pooling2d", "average_pooling2d", "dropout", "flatten", "batch_normalization")
TF_SUMMARY_STEPS = 100  # tf.estimator.RunConfig's save_summary_steps default
HOROVOD_MODULES = ("horovod.tensorflow", "horovod.tensorflow.keras", "horovod.keras")
HOROVOD_RANK_CALLS = {"rank": "get_rank_id", "size": "get_rank_size", "local_rank": "get_local_rank_id",
                      "local_size": "get_local_rank_size"}
DISTRIBUTE = "npurun.distribute"
RANK_FUNCTIONS = {"get_rank_id", "rank", "get_npu_rank_id"}
RUN_CONFIG_NAMES = {"NPURunConfig"}  # after the rewrite, and in scripts that already use it
ESTIMATOR_POSITIONAL = ("model_fn", "model_dir", "config", "params", "warm_start_from")


@dataclass(frozen=True)
class Note:
    line: int
    text: str

    def __str__(self):
        return f"line {self.line}: {self.text}"


@dataclass
class Migration:
    """The result of migrating one source text."""

    original: str
    migrated: str
    changes: list = field(default_factory=list)
    not_migrated: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.migrated != self.original

    def diff(self, filename: str = "script.py") -> str:
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                            self.migrated.splitlines(keepends=True),
                                            fromfile=f"a/{filename}", tofile=f"b/{filename}"))

    def report(self, filename: str = "script.py") -> str:
        lines = [f"npurun migrate: {filename}: {len(self.changes)} change(s), "
                 f"{len(self.not_migrated)} thing(s) not migrated"]
        lines += [f"  {note}" for note in self.changes]
        if self.not_migrated:
            lines.append("not migrated (left as they were):")
            lines += [f"  {note}" for note in self.not_migrated]
        if self.notes:
            lines.append("notes:")
            lines += [f"  {note}" for note in self.notes]
        return "\n".join(lines)


def _code(node) -> str:
    return cst.Module([]).code_for_node(node)


def _arg_code(arg) -> str:
    return _code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))


def _int_value(node):
    if isinstance(node, cst.Integer):
        return int(node.value)
    return None


def _is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_rank_expr(node) -> bool:
    """A call of a rank function (`hvd.rank()`, `get_rank_id()`, `rank()`, ...)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    return name in RANK_FUNCTIONS


def _rank_test(test):
    """For `rank == 0` / `0 == rank` return '==', for `!=` forms return '!=', else None."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    operator = "==" if isinstance(target.operator, cst.Equal) else "!=" if isinstance(target.operator, cst.NotEqual) \
        else None
    if operator is None:
        return None
    left, right = test.left, target.comparator
    if (_is_rank_expr(left) and _int_value(right) == 0) or (_is_rank_expr(right) and _int_value(left) == 0):
        return operator
    return None


def rank_zero_fix(expr):
    """`x if rank() == 0 else None` -> `x if rank() == 0 else 0` (and `None if rank() != 0 else x`); else None."""
    if not isinstance(expr, cst.IfExp):
        return None
    operator = _rank_test(expr.test)
    if operator == "==" and _is_none(expr.orelse):
        return expr.with_changes(orelse=cst.Integer("0"))
    if operator == "!=" and _is_none(expr.body):
        return expr.with_changes(body=cst.Integer("0"))
    return None


class NpuMigration(VisitorBasedCodemodCommand):
    DESCRIPTION = "Rewrite tf.estimator / Horovod scripts into npurun's NPU form."
    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)

    def __init__(self, context: CodemodContext):
        super().__init__(context)
        self.changes: list = []
        self.not_migrated: list = []
        self.notes: list = []
        self._import_depth = 0
        self._handled = set()  # inner nodes of a deep rename: not reported on their own
        self._layers_imported = False

    # ---- helpers -------------------------------------------------------------------------------------
    def _line(self, node) -> int:
        try:
            return self.get_metadata(PositionProvider, node).start.line
        except KeyError:
            return 0

    def _qnames(self, node) -> set:
        return {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}

    def _estimator_name(self, node):
        """The tf.estimator member `node` names ('RunConfig', ...) or None."""
        for qname in self._qnames(node):
            for module in ESTIMATOR_MODULES:
                if qname.startswith(module + ".") and "." not in qname[len(module) + 1:]:
                    return qname[len(module) + 1:]
        return None

    def _deep_name(self, node):
        """The member path below a tf.estimator module ("inputs.numpy_input_fn") or None."""
        for qname in self._qnames(node):
            for module in ESTIMATOR_MODULES:
                if qname.startswith(module + ".") and "." in qname[len(module) + 1:]:
                    return qname[len(module) + 1:]
        return None

    def _layer_name(self, node):
        for qname in self._qnames(node):
            for module in LAYER_MODULES:
                if qname.startswith(module + ".") and "." not in qname[len(module) + 1:]:
                    return qname[len(module) + 1:]
        return None

    def visit_Attribute(self, node):
        if not self._import_depth and (self._deep_name(node) in ESTIMATOR_DEEP_RENAMES or
                                       self._layer_name(node) in NPU_LAYERS):
            inner = node.value
            while isinstance(inner, cst.Attribute):
                self._handled.add(id(inner))
                inner = inner.value
        return True

    def _horovod_name(self, node):
        for qname in self._qnames(node):
            for module in HOROVOD_MODULES:
                if qname.startswith(module + ".") and "." not in qname[len(module) + 1:]:
                    return qname[len(module) + 1:]
        return None

    def _import(self, module, name):
        AddImportsVisitor.add_needed_import(self.context, module, name)

    def _changed(self, node, text):
        self.changes.append(Note(self._line(node), text))

    def _left(self, node, text):
        self.not_migrated.append(Note(self._line(node), text))

    # ---- imports are not rewritten in place ----------------------------------------------------------
    def visit_Import(self, node):
        self._import_depth += 1
        for alias in node.names:
            module = _code(alias.name)
            if module.split(".")[0] == "horovod":
                asname = alias.asname.name.value if alias.asname else None
                RemoveImportsVisitor.remove_unused_import(self.context, module, asname=asname)

    def leave_Import(self, original_node, updated_node):
        self._import_depth -= 1
        return updated_node

    def visit_ImportFrom(self, node):
        self._import_depth += 1
        if node.module is not None and _code(node.module).split(".")[0] == "horovod" and \
                not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                asname = alias.asname.name.value if alias.asname else None
                RemoveImportsVisitor.remove_unused_import(self.context, _code(node.module), alias.name.value, asname)

    def leave_ImportFrom(self, original_node, updated_node):
        self._import_depth -= 1
        return updated_node

    # ---- names ---------------------------------------------------------------------------------------
    def _rename(self, original_node, updated_node):
        if self._import_depth or id(original_node) in self._handled:
            return updated_node
        deep = self._deep_name(original_node)
        if deep in ESTIMATOR_DEEP_RENAMES:
            module, name = ESTIMATOR_DEEP_RENAMES[deep]
            self._import(module, name)
            self._changed(original_node, f"{_code(original_node)} -> {name} (from {module})")
            return cst.Name(name)
        layer = self._layer_name(original_node)
        if layer in NPU_LAYERS and isinstance(original_node, cst.Attribute):
            if not self._layers_imported:  # libcst repeats an aliased import once per request
                AddImportsVisitor.add_needed_import(self.context, "npurun.tf1", "layers", "npu_layers")
                self._layers_imported = True
            self._changed(original_node, f"{_code(original_node)} -> npu_layers.{layer} (from npurun.tf1 "
                                         f"import layers as npu_layers; TF 2.21 has no tf.compat.v1.layers)")
            return cst.Attribute(value=cst.Name("npu_layers"), attr=cst.Name(layer))
        member = self._estimator_name(original_node)
        if member is None:
            return updated_node
        if member not in ESTIMATOR_RENAMES:
            entry = TF_ESTIMATOR.get(member)
            if entry is None or isinstance(entry, Unsupported):
                why = entry.why if entry else "npurun does not provide it"
                self._left(original_node, f"{_code(original_node)}: no npurun counterpart ({why})")
            else:
                provided = ", ".join(sorted(k for k in ESTIMATOR_DEEP_RENAMES if k.startswith(member + ".")))
                self._left(original_node, f"{_code(original_node)}: left as it is (npurun provides "
                                          f"{provided or 'no counterpart'} of it, rewritten where used); under "
                                          f"`npurun run` the compat layer provides tf.estimator.{member}")
            return updated_node
        module, name = ESTIMATOR_RENAMES[member]
        self._import(module, name)
        if isinstance(original_node, cst.Name):  # imported directly: that import may now be unused
            RemoveImportsVisitor.remove_unused_import_by_node(self.context, original_node)
        self._changed(original_node, f"{_code(original_node)} -> {name} (from {module})")
        return cst.Name(name)

    def leave_Attribute(self, original_node, updated_node):
        return self._rename(original_node, updated_node)

    def leave_Name(self, original_node, updated_node):
        return self._rename(original_node, updated_node)

    # ---- statements ----------------------------------------------------------------------------------
    def leave_SimpleStatementLine(self, original_node, updated_node):
        statement = original_node.body[0] if len(original_node.body) == 1 else None
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call) and \
                self._horovod_name(statement.value.func) == "init":
            self._changed(original_node, f"removed {_code(statement.value)} (npurun's collectives initialise "
                                         f"themselves)")
            return cst.RemovalSentinel.REMOVE
        return updated_node

    # ---- calls ---------------------------------------------------------------------------------------
    def leave_Call(self, original_node, updated_node):
        return _realign(original_node, self._call(original_node, updated_node))

    def _call(self, original_node, updated_node):
        member = self._estimator_name(original_node.func)
        if member in ("RunConfig", "NPURunConfig") or _code(original_node.func) in RUN_CONFIG_NAMES:
            return self._run_config_call(original_node, updated_node, from_tf=member == "RunConfig")
        if member == "Estimator":
            return self._estimator_call(original_node, updated_node)
        horovod = self._horovod_name(original_node.func)
        if horovod is not None:
            return self._horovod_call(horovod, original_node, updated_node)
        return updated_node

    def _horovod_call(self, member, original_node, updated_node):
        if member in HOROVOD_RANK_CALLS:
            name = HOROVOD_RANK_CALLS[member]
            self._import(DISTRIBUTE, name)
            self._changed(original_node, f"{_code(original_node)} -> {name}() (from {DISTRIBUTE})")
            return cst.Call(func=cst.Name(name))
        if member == "DistributedOptimizer":
            extra = [a for a in updated_node.args[1:] if not (a.keyword and a.keyword.value == "name")]
            if extra:
                self._left(original_node, f"{_code(original_node.func)}(...): arguments "
                                          f"{', '.join(_arg_code(a) for a in extra)} have no "
                                          f"NPUDistributedOptimizer counterpart")
                return updated_node
            self._import(DISTRIBUTE, "NPUDistributedOptimizer")
            self._changed(original_node, f"{_code(original_node.func)} -> NPUDistributedOptimizer (from {DISTRIBUTE})")
            return updated_node.with_changes(func=cst.Name("NPUDistributedOptimizer"))
        if member == "BroadcastGlobalVariablesHook" and len(updated_node.args) == 1:
            self._import(DISTRIBUTE, "NPUBroadcastGlobalVariablesHook")
            self._import(DISTRIBUTE, "get_rank_id")
            root = updated_node.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            self._changed(original_node, f"{_code(original_node.func)}(root) -> "
                                         f"NPUBroadcastGlobalVariablesHook(root, get_rank_id()) (from {DISTRIBUTE})")
            return cst.Call(func=cst.Name("NPUBroadcastGlobalVariablesHook"),
                            args=[root, cst.Arg(cst.Call(func=cst.Name("get_rank_id")))])
        if member != "init":
            self._left(original_node, f"{_code(original_node.func)}: no npurun counterpart is known to this tool "
                                      f"(see docs/compat.md for npurun.distribute)")
        return updated_node

    def _estimator_call(self, original_node, updated_node):
        args = list(updated_node.args)
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        for index in positional:
            if index >= 4 and index < len(ESTIMATOR_POSITIONAL):
                keyword = ESTIMATOR_POSITIONAL[index]
                args[index] = args[index].with_changes(keyword=cst.Name(keyword), equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
                self._changed(original_node, f"Estimator positional argument {index + 1} -> {keyword}= "
                                             f"(NPUEstimator's fifth parameter is job_start_file)")
        return updated_node.with_changes(args=args)

    def _run_config_call(self, original_node, updated_node, from_tf: bool):
        names = [name for name, _ in TF_RUN_CONFIG_PARAMETERS]
        kept = []
        for index, arg in enumerate(updated_node.args):
            original_arg = original_node.args[index]
            if arg.star:
                self._left(original_arg, f"{_arg_code(arg)}: arguments passed with * / ** are not checked "
                                         f"against NPURunConfig's options")
                kept.append(arg)
                continue
            if arg.keyword is None:
                if not from_tf or index >= len(names):
                    kept.append(arg)
                    continue
                keyword = names[index]
                arg = arg.with_changes(keyword=cst.Name(keyword), equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
                self._changed(original_arg, f"RunConfig positional argument {index + 1} -> {keyword}= "
                                            f"(NPURunConfig takes keywords only)")
            keyword = arg.keyword.value
            option = OPTIONS.get(keyword)
            if option is None:
                if from_tf:
                    self._changed(original_arg, f"removed argument {_arg_code(arg)} "
                                                f"(NPURunConfig does not accept {keyword})")
                    continue
                self._left(original_arg, f"{keyword}: not an NPURunConfig option (TypeError at construction)")
            elif option.status != "effect":
                self.notes.append(Note(self._line(original_arg), f"argument {keyword}: NPURunConfig accepts it; "
                                                                 f"status here: {option.status}"))
            if keyword == "save_checkpoints_steps":
                fixed = rank_zero_fix(arg.value)
                if fixed is not None:
                    self._changed(original_arg, f"save_checkpoints_steps: `... else None` -> `... else 0` for ranks "
                                                f"other than 0 (for NPURunConfig None means every 100 steps; 0 "
                                                f"disables saving)")
                    arg = arg.with_changes(value=fixed)
            elif keyword == "save_checkpoints_secs" and rank_zero_fix(arg.value) is not None:
                self._left(original_arg, "save_checkpoints_secs saved on rank 0 only: on the other ranks NPURunConfig "
                                         "would save every 100 steps; give them save_checkpoints_steps=0 instead")
            kept.append(arg)
        given = {arg.keyword.value for arg in kept if arg.keyword is not None}
        if from_tf and "save_summary_steps" not in given and not any(arg.star for arg in kept):
            template = kept[-1] if kept else None
            added = cst.Arg(value=cst.Integer(str(TF_SUMMARY_STEPS)), keyword=cst.Name("save_summary_steps"),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace("")))
            if template is not None:
                separator = kept[-2].comma if len(kept) > 1 and kept[-2].comma != cst.MaybeSentinel.DEFAULT \
                    else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                kept[-1] = template.with_changes(comma=separator)
            kept.append(added)
            self._changed(original_node, f"added save_summary_steps={TF_SUMMARY_STEPS}: tf.estimator.RunConfig "
                                         f"wrote TensorBoard summaries every {TF_SUMMARY_STEPS} steps; "
                                         f"NPURunConfig's default 0 writes none")
        if kept and updated_node.args:
            kept[-1] = kept[-1].with_changes(comma=updated_node.args[-1].comma)
        return updated_node.with_changes(args=kept)


def _realign(original_node, updated_node):
    """When a call's name changed length, move the continuation lines of arguments aligned with its
    opening parenthesis by the same amount (other layouts are left alone)."""
    delta = len(_code(original_node.func)) - len(_code(updated_node.func))
    if not delta or not updated_node.args or "\n" in _code(updated_node.whitespace_before_args):
        return updated_node
    args = list(updated_node.args)
    for index, arg in enumerate(args[:-1]):
        after = arg.comma.whitespace_after if arg.comma != cst.MaybeSentinel.DEFAULT else None
        if not isinstance(after, cst.ParenthesizedWhitespace):
            continue
        indent = after.last_line.value
        if delta > 0 and len(indent) <= delta:
            continue
        new_indent = indent[:len(indent) - delta] if delta > 0 else indent + " " * -delta
        args[index] = arg.with_changes(comma=arg.comma.with_changes(
            whitespace_after=after.with_changes(last_line=cst.SimpleWhitespace(new_indent))))
    return updated_node.with_changes(args=args)


def migrate_source(source: str) -> Migration:
    """Migrate one script's source text (see the module docstring)."""
    context = CodemodContext()
    command = NpuMigration(context)
    module = cst.parse_module(source)
    migrated = command.transform_module(module).code
    # By line; within a line in the order found (distinct notes only).
    changes, left, notes = (sorted(dict.fromkeys(found), key=lambda n: n.line)
                            for found in (command.changes, command.not_migrated, command.notes))
    if migrated == source:
        changes = []
    return Migration(source, migrated, changes, left, notes)


def migrate_file(path: str) -> Migration:
    with open(path, encoding="utf-8") as handle:
        return migrate_source(handle.read())
