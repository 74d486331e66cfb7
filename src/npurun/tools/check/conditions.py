"""Which `if` branches a script takes with its flags' defaults, for `npurun check`.

A use under `if FLAGS.use_xla_for_gpu:` runs only when the script is started with that flag: check says
so ("only if --use_xla_for_gpu"), and when the flag's default (from `flags.DEFINE_*` / `tf.flags.DEFINE_*`
or argparse's `add_argument`, read statically) does not take the branch, the use is listed but not
counted as raising. A test that cannot be evaluated from literal defaults is named, and counted. A module
constant counts as a flag with that one value: a name the module binds once, at its top level, to a literal
and never rebinds anywhere in it (VDSR's `USE_QUEUE_LOADING = True` choosing its input pipeline). An
environment variable read (`int(os.getenv('RANK_SIZE', '1'))`, `os.environ['RANK_ID']`), in the test or bound so
to a module constant, has the value the script will see under `npurun run` here: the variable as set now, else
the run's one-rank default (`npurun.tools.run_environment`), else the read's own default (DIN's
`if rank_size == 1:`, whose other branch reads a `rank_id` its launch script's `sed` defines).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..run_environment import run_value

_UNKNOWN = object()
_DEFINE_TYPES = {"DEFINE_bool", "DEFINE_boolean", "DEFINE_integer", "DEFINE_float", "DEFINE_string",
                 "DEFINE_enum", "DEFINE_list", "DEFINE_multi_string", "DEFINE_multi_integer"}


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def flag_defaults(tree) -> dict:
    """`name -> default` of every flag a module defines (absl/TF flags and argparse), literal defaults only."""
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if func in _DEFINE_TYPES:
            name = node.args[0] if node.args else _keyword(node, "name")
            default = node.args[1] if len(node.args) > 1 else _keyword(node, "default")
            name = _literal(name) if name is not None else _UNKNOWN
            if isinstance(name, str) and default is not None:
                found[name] = _literal(default)
        elif func == "set_default" and len(node.args) == 2:  # FLAGS.set_default('batch', 64)
            name = _literal(node.args[0])
            if isinstance(name, str):
                found[name] = _literal(node.args[1])
        elif func == "add_argument":
            options = [value for value in map(_literal, node.args) if isinstance(value, str)]
            dest = _keyword(node, "dest")
            dest = _literal(dest) if dest is not None else next(
                (o.lstrip("-").replace("-", "_") for o in options if o.startswith("--")),
                options[0].lstrip("-").replace("-", "_") if options else None)
            if not isinstance(dest, str) or not options or not options[0].startswith("-"):
                continue
            action = _keyword(node, "action")
            action = _literal(action) if action is not None else None
            default = _keyword(node, "default")
            if default is not None:
                value = _literal(default)
            elif action == "store_true":
                value = False
            elif action == "store_false":
                value = True
            else:
                value = None
            kind = _keyword(node, "type")
            if isinstance(value, str) and isinstance(kind, ast.Name) and kind.id in ("int", "float"):
                try:
                    value = int(value) if kind.id == "int" else float(value)
                except ValueError:
                    value = _UNKNOWN
            found[dest] = value
    return found


def flag_name(node, flags):
    """`FLAGS.x` / `args.x` / `flags.FLAGS.x` / `opt.x` where x is a flag some module defines: x, else None."""
    if isinstance(node, ast.Attribute) and node.attr in flags and isinstance(node.value, (ast.Name, ast.Attribute)):
        return node.attr
    return None


def module_constants(tree) -> dict:
    """`name -> value` of the module's constants: bound once, at the top level, to a literal (a number, a
    string, a bool, None), never rebound anywhere in the module (no other store, `del` or `global`)."""
    if not isinstance(tree, ast.Module):
        return {}
    candidates = {}
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            read = environment_read(statement.value)
            value = _literal(statement.value) if read is None else (
                _UNKNOWN if read[1] is _UNKNOWN else EnvironmentValue(read[1], read[0]))
            if value is _UNKNOWN and read is None and _reads_interpreter(statement.value):
                # `is_py2 = sys.version[0] == '2'` (SRNTT's tensorlayer choosing `Queue` or `queue`)
                computed = _evaluate(statement.value, {})
                if isinstance(computed, (bool, int, str)):
                    value = InterpreterValue(computed, ast.unparse(statement.value)[:60])
            if value is None or isinstance(value, (bool, int, float, str, EnvironmentValue, InterpreterValue)):
                candidates.setdefault(statement.targets[0].id, []).append(value)
    stores = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                stores[name] = stores.get(name, 0) + 2
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores[node.name] = stores.get(node.name, 0) + 2
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 2
        elif isinstance(node, ast.alias):
            bound = (node.asname or node.name).split(".")[0]
            stores[bound] = stores.get(bound, 0) + 2
    return {name: values[0] for name, values in candidates.items() if len(values) == 1 and stores.get(name) == 1}


@dataclass(frozen=True)
class EnvironmentValue:
    """A module constant bound to an environment variable's value under `npurun run`."""
    value: object
    variable: str


_CONVERSIONS = {"int": int, "float": float, "str": str}


def _is_os_environ(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os") or (isinstance(node, ast.Name) and node.id == "environ")


def environment_read(node):
    """(variable, value under `npurun run`) for `os.getenv('X'[, d])`, `os.environ.get('X'[, d])`,
    `os.environ['X']`, optionally in `int(...)` / `float(...)` / `str(...)`; None for anything else. The value
    is _UNKNOWN when it cannot be told (unset with no default, or not convertible)."""
    convert = None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONVERSIONS
            and len(node.args) == 1 and not node.keywords):
        convert, node = _CONVERSIONS[node.func.id], node.args[0]
    variable, default, subscript = None, None, False
    if isinstance(node, ast.Call) and node.args and not node.keywords and len(node.args) <= 2:
        func = node.func
        if ((isinstance(func, ast.Attribute) and func.attr == "getenv" and isinstance(func.value, ast.Name)
             and func.value.id == "os") or (isinstance(func, ast.Name) and func.id == "getenv")
                or (isinstance(func, ast.Attribute) and func.attr == "get" and _is_os_environ(func.value))):
            variable = _literal(node.args[0])
            default = _literal(node.args[1]) if len(node.args) == 2 else None
    elif isinstance(node, ast.Subscript) and _is_os_environ(node.value):
        variable, subscript = _literal(node.slice), True
    if not isinstance(variable, str):
        return None
    value = run_value(variable)
    if value is None:  # unset: os.environ['X'] raises (told by the run), os.getenv('X') is its default
        value = _UNKNOWN if subscript else default
    if convert is not None and value is not _UNKNOWN:
        try:
            value = convert(value)
        except (TypeError, ValueError):
            value = _UNKNOWN
    return variable, value


@dataclass(frozen=True)
class InterpreterValue:
    """A module constant computed from the Python version alone (`is_py2 = sys.version[0] == '2'`)."""
    value: object
    source: str


def _is_name(node, name) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def interpreter_read(node):
    """The value under the Python running check (the one `npurun run` uses) of `sys.version`, `sys.version_info`
    (and `.major` / `.minor`), `six.PY2` / `six.PY3`; _UNKNOWN for anything else."""
    import sys

    if isinstance(node, ast.Attribute) and _is_name(node.value, "sys") and node.attr in ("version", "version_info"):
        return sys.version if node.attr == "version" else tuple(sys.version_info)
    if (isinstance(node, ast.Attribute) and node.attr in ("major", "minor") and isinstance(node.value, ast.Attribute)
            and _is_name(node.value.value, "sys") and node.value.attr == "version_info"):
        return getattr(sys.version_info, node.attr)
    if isinstance(node, ast.Attribute) and _is_name(node.value, "six") and node.attr in ("PY2", "PY3"):
        return node.attr == "PY3"
    return _UNKNOWN


def _reads_interpreter(node) -> bool:
    return any(interpreter_read(child) is not _UNKNOWN for child in ast.walk(node))


def _constant_name(node, constants):
    if constants and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in constants:
        return node.id
    return None


_STRING_METHODS = {"lower": str.lower, "upper": str.upper, "strip": str.strip}


def _evaluate(node, flags, constants=None):
    name = flag_name(node, flags)
    if name is not None:
        return flags[name]
    name = _constant_name(node, constants)
    if name is not None:
        value = constants[name]
        return value.value if isinstance(value, (EnvironmentValue, InterpreterValue)) else value
    read = environment_read(node)
    if read is not None:
        return read[1]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_METHODS
            and not node.args and not node.keywords):  # `FLAGS.platform.lower() == 'modelarts'`
        value = _evaluate(node.func.value, flags, constants)
        return _STRING_METHODS[node.func.attr](value) if isinstance(value, str) else _UNKNOWN
    value = interpreter_read(node)
    if value is not _UNKNOWN:
        return value
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):  # `sys.version[0]`
        value = _evaluate(node.value, flags, constants)
        try:
            return _UNKNOWN if value is _UNKNOWN else value[node.slice.value]
        except (TypeError, IndexError, KeyError):
            return _UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values = [_evaluate(e, flags, constants) for e in node.elts]
        if any(v is _UNKNOWN for v in values):
            return _UNKNOWN
        return tuple(values) if isinstance(node, ast.Tuple) else values  # `sys.version_info >= (3, 0)`
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _evaluate(node.operand, flags, constants)
        return _UNKNOWN if value is _UNKNOWN else not value
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, flags, constants) for v in node.values]
        if isinstance(node.op, ast.And):
            if any(v is not _UNKNOWN and not v for v in values):
                return False
            return _UNKNOWN if any(v is _UNKNOWN for v in values) else True
        if any(v is not _UNKNOWN and v for v in values):
            return True
        return _UNKNOWN if any(v is _UNKNOWN for v in values) else False
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _evaluate(node.left, flags, constants), _evaluate(node.comparators[0], flags, constants)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        op = node.ops[0]
        try:
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
            if isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
                return {ast.Gt: left > right, ast.GtE: left >= right, ast.Lt: left < right,
                        ast.LtE: left <= right}[type(op)]
        except TypeError:
            return _UNKNOWN
    return _UNKNOWN


def flag_condition(test, flags, constants=None):
    """For an `if` test that reads a flag or a module constant: (description, taken) where taken is True / False
    with the flags' defaults (the constants' values) or None when it cannot be told; None when the test reads
    neither."""
    names = sorted({name for node in ast.walk(test) for name in [flag_name(node, flags)] if name is not None})
    fixed = sorted({name for node in ast.walk(test) for name in [_constant_name(node, constants)] if name is not None})
    read = {}
    for node in ast.walk(test):
        found = environment_read(node)
        if found is not None:
            read.setdefault(found[0], found[1])  # the outermost read (with its int(...)) comes first
    python = _reads_interpreter(test)
    if not names and not fixed and not read and not python:
        return None
    value = _evaluate(test, flags, constants)
    source = ast.unparse(test)
    if len(source) > 80:
        source = source[:77] + "..."
    defaults = [f"--{name}" + ("" if flags[name] is _UNKNOWN else f" default {flags[name]!r}") for name in names]
    for name in fixed:
        constant = constants[name]
        if isinstance(constant, EnvironmentValue):
            defaults.append(f"{name} = {constant.value!r} from ${constant.variable} under npurun run")
        elif isinstance(constant, InterpreterValue):
            defaults.append(f"{name} = {constant.source} = {constant.value!r} on this Python")
        else:
            defaults.append(f"{name} = {constant!r} in the module")
    defaults += [f"${variable} " + ("unset" if value is _UNKNOWN else f"{value!r}") + " under npurun run"
                 for variable, value in sorted(read.items())]
    if python:
        import platform

        defaults.append(f"Python {platform.python_version()} here")
    return f"`{source}` ({', '.join(defaults)})", (None if value is _UNKNOWN else bool(value))


def _is_string(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and bool(node.elts) and all(map(_is_string, node.elts))


def dispatch_condition(test):
    """For an `if` test that picks code by a configuration value rather than a flag (`opts['z_test'] ==
    'cramer'`, `params['use_bfloat16']`, `self.dataset_name == 'celebA'`, `cfg.get('loss')`): its text, else
    None. Which branch runs is decided by a config dict or a string the script computes, which check does
    not evaluate; `__name__ == '__main__'` is not such a test (it is true for the script)."""
    for node in ast.walk(test):
        if (isinstance(node, ast.Name) and node.id == "__name__") or (
                isinstance(node, ast.Attribute) and node.attr in ("__name__", "environ", "argv", "platform")):
            return None
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and any(map(_is_string, (node.left, *node.comparators))):
            break
        if isinstance(node, ast.Subscript) and _is_string(node.slice):
            break
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and node.args and _is_string(node.args[0])):
            break
    else:
        return None
    source = ast.unparse(test)
    return f"`{source[:77] + '...' if len(source) > 80 else source}`"


def parse_argv(argv) -> dict:
    """`--name=value`, `--name value`, `--name` (-> True) and absl's `--noname` (-> False, as `noname`) of the
    arguments a script is started with: name (dashes as underscores) -> the raw string, or a bool."""
    found, argv = {}, [a for a in argv]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--") or token == "--":
            continue
        name, equals, value = token[2:].partition("=")
        name = name.replace("-", "_")
        if equals:
            found[name] = value
        elif index < len(argv) and not argv[index].startswith("--"):
            found[name] = argv[index]
            index += 1
        else:
            found[name] = True
    return found


def _converted(raw, default):
    """A flag's value from the command line, typed as its default is."""
    if not isinstance(raw, str):
        return raw
    if isinstance(default, bool) or raw.lower() in ("true", "false"):
        return raw.lower() in ("true", "1", "yes", "t", "y")
    for kind in (int, float):
        if isinstance(default, kind) or default is None:
            try:
                return kind(raw)
            except ValueError:
                pass
    return raw


def apply_argv(flags: dict, given: dict) -> None:
    """Put the values the script is started with over the flags' defaults (flags defined so far)."""
    for name, raw in given.items():
        if name in flags:
            flags[name] = _converted(raw, flags[name])
        elif raw is True and name.startswith("no") and name[2:] in flags:  # absl: --nouse_tpu
            flags[name[2:]] = False
