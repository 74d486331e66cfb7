"""Names a module reads that nothing can bind: a NameError where the line runs (pyflakes-style, for `npurun check`).

Deep_Speech's `per_device_batch_size(flags_obj.batch_size, num_gpus)` reads `num_gpus` in a function whose line
that set it is commented out; `num_gpus` is a parameter of another function, so a module-wide "bound somewhere"
test does not see it. Here each read is resolved as Python resolves it: the function's own names (its arguments
and whatever it binds), those of the functions around it, the class body it is directly in (a method does not
see its class's names), the module's top level (any `global` declaration counts as a module binding), the
builtins. Only what is certain is reported:

- a module that could bind names check cannot see is skipped whole: one that reads `exec`, `globals`, `locals`,
  `vars`, `__builtins__`, `sys.modules` or imports `builtins` / `__builtin__` (the caller also skips a module
  with a star import whose names are not known statically);
- a read inside a `try` body whose handlers catch NameError (`except NameError`, `Exception`, `BaseException`,
  a bare `except`) is not reported: the script expects it may fail (`try: unicode except NameError: ...`);
- Python 2's builtins (`unicode`, `xrange`, `reduce`, ...) are left to the branches that guard them;
- `_` (gettext.install puts it into builtins) and walrus targets are taken as bound.
"""
from __future__ import annotations

import ast
import builtins

_FUNCTION_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_UNCERTAIN_NAMES = frozenset({"exec", "execfile", "globals", "locals", "vars", "__builtins__"})
_BROAD = frozenset({"NameError", "Exception", "BaseException", "StandardError"})
PYTHON2_NAMES = frozenset({"unicode", "basestring", "xrange", "long", "unichr", "raw_input", "reload", "file",
                           "execfile", "cmp", "buffer", "apply", "intern", "coerce", "reduce", "StandardError",
                           "unicode_literals", "WindowsError"})
_ALWAYS = frozenset(dir(builtins)) | {"__name__", "__file__", "__doc__", "__builtins__", "__spec__", "__loader__",
                                      "__package__", "__path__", "__annotations__", "__cached__", "__debug__",
                                      "__class__", "__module__", "__qualname__", "_"} | PYTHON2_NAMES


def _arguments(args: ast.arguments):
    for arg in (*getattr(args, "posonlyargs", ()), *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
        if arg is not None:
            yield arg.arg


def _is_scope(node) -> bool:
    return isinstance(node, (*_FUNCTION_SCOPES, ast.ClassDef, *_COMPREHENSIONS))


def _bound_in(scope) -> set:
    """The names a scope binds itself (not those of the scopes nested in it)."""
    names = set()
    if isinstance(scope, _FUNCTION_SCOPES):
        names.update(_arguments(scope.args))
        body = scope.body if isinstance(scope.body, list) else [scope.body]
    elif isinstance(scope, _COMPREHENSIONS):
        body = [part for generator in scope.generators for part in (generator.target, *generator.ifs)]
        body += [generator.iter for generator in scope.generators[1:]]
        body += [scope.key, scope.value] if isinstance(scope, ast.DictComp) else [scope.elt]
    else:
        body = scope.body
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.alias) and node.name != "*":
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (getattr(ast, "MatchAs", ()), getattr(ast, "MatchStar", ()))) and node.name:
            names.add(node.name)
        elif isinstance(node, getattr(ast, "MatchMapping", ())) and node.rest:
            names.add(node.rest)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if _is_scope(node):
            stack.extend(_outer_parts(node))  # decorators, defaults, bases, the first iterable: read out here
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names


def _outer_parts(scope):
    """The parts of a nested scope evaluated in the scope around it."""
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = scope.args
        return [*scope.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None),
                *(a.annotation for a in (*getattr(args, "posonlyargs", ()), *args.args, args.vararg,
                                         *args.kwonlyargs, args.kwarg) if a is not None and a.annotation),
                *([scope.returns] if scope.returns else [])]
    if isinstance(scope, ast.Lambda):
        return [*scope.args.defaults, *(d for d in scope.args.kw_defaults if d is not None)]
    if isinstance(scope, ast.ClassDef):
        return [*scope.decorator_list, *scope.bases, *scope.keywords]
    return [scope.generators[0].iter]


def _catches_name_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any((t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None) in _BROAD
               for t in types)


def uncertain(tree) -> bool:
    """The module may bind names check cannot see (exec, globals(), builtins, sys.modules)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _UNCERTAIN_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            return True
        if isinstance(node, ast.alias) and node.name.split(".")[0] in ("builtins", "__builtin__"):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(("builtins", "__builtin__")):
            return True
    return False


def undefined_reads(tree) -> dict:
    """(line, column) -> name of each read of a name nothing binds where it is read (see the module's doc);
    the module's star imports are not accounted for here (the caller drops the names they bring)."""
    if not isinstance(tree, ast.Module) or uncertain(tree):
        return {}
    module = _bound_in(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):  # `global x; x = ...` in a function binds a module name
            module.update(node.names)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            module.add(node.target.id)  # (a walrus binds in the enclosing function: taken as bound anywhere)
    found = {}

    def visit(node, chain, guarded):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not guarded:
            name = node.id
            if name not in module and name not in _ALWAYS and not _resolved(name, chain):
                found[(node.lineno, node.col_offset)] = name
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            broad = any(_catches_name_error(h) for h in node.handlers)
            for statement in node.body:
                visit(statement, chain, guarded or broad)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                visit(part, chain, guarded)
            return
        if _is_scope(node) and node is not tree:
            for part in _outer_parts(node):
                visit(part, chain, guarded)
            inner = chain + [(node, _bound_in(node))]
            if isinstance(node, _FUNCTION_SCOPES):
                parts = node.body if isinstance(node.body, list) else [node.body]
            elif isinstance(node, ast.ClassDef):
                parts = node.body
            else:
                parts = [p for g in node.generators for p in (g.target, *g.ifs)]
                parts += [g.iter for g in node.generators[1:]]
                parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for part in parts:
                visit(part, inner, guarded)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, chain, guarded)

    for statement in tree.body:
        visit(statement, [], False)
    return found


def _resolved(name, chain) -> bool:
    for index, (scope, names) in enumerate(chain):
        if isinstance(scope, ast.ClassDef) and index != len(chain) - 1:
            continue  # a class body's names are not seen from the functions and comprehensions in it
        if name in names:
            return True
    return False
