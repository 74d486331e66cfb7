"""Which functions of a script and its local modules the run can reach, for `npurun check`.

A use that raises only matters if its line runs. Module-level code runs (the script's, and a local
module's where it is imported: `if FLAGS.platform == 'modelarts': from help_modelarts import ...` runs
help_modelarts.py only on ModelArts); a function or method runs if code that runs calls it, or hands it on by name.
Each name a module reads is recorded by the scanner with the condition it is read under (a flag branch the
defaults do not take, an `if` on a config dict or a string: `opts['z_test'] == 'cramer'`, a TPU branch, a
dict of choices, a lookup by its name as a string), so a function reached only that way is "only if" that
condition, and one that nothing reachable names (mixmatch's `kl_divergence_from_logits`, used by another
algorithm's script; EfficientNet's `TpuBatchNormalization`, named only in a comment) is listed, not counted.

Names are matched by their last part (`layers.entropy_from_logits`, `self.make_source_dataset`): a call
through an object check cannot type reaches every function or method of that name. A method nothing in the
project names by attribute (`call`, `before_run`, `__init__`) is called by a framework: it runs when its class
is used, and a method reached by name runs only if its class is used too. A decorated function may be
registered by its decorator: it counts as used where it is defined, and one registered with
`@ops.RegisterGradient("Op")` only if a graph has that op (vendored `npu_ops.py`'s gradients of NPU ops). A script whose module-level code calls none of its own functions (a fragment)
has all its functions counted as run.
"""
from __future__ import annotations

from dataclasses import replace

UNREACHED = object()


def dispatched(finding, condition: str):
    """A raising finding on a line under a config-dict or string test: listed with its condition, not counted."""
    return replace(finding, status=f"{finding.status}, only if {condition}",
                   detail=f"{finding.detail}; the line runs only if {condition}, a test on a config dict or a string "
                          f"that check does not evaluate: it raises only when the script's configuration takes "
                          f"that branch", error=False)


def _combine(outer, condition):
    return condition if outer is None else outer


BY_STRING = "it is looked up by its name as a string"  # the weakest reason: `== 'cramer'` is a value, not a call


def _better(new, old) -> bool:
    return old is UNREACHED or (old is not None and new is None) or (old == BY_STRING and new not in (None, BY_STRING))


def reachable(scanners: dict, script: str) -> dict:
    """(module path, context) -> None (runs unconditionally), a condition's text (runs only under it), for
    every function or method the run can reach; contexts not in the result are not reached."""
    by_name: dict = {}  # last name part -> [(path, context)]
    owners = {(path, context): owner for path, scanner in scanners.items()
              for context, (_name, kind, owner, _registered) in scanner.defines.items() if kind == "method"}
    named = set()  # every name read anywhere (to tell framework-called methods)
    for path, scanner in scanners.items():
        for context, (name, _kind, _owner, _registered) in scanner.defines.items():
            by_name.setdefault(name, []).append((path, context))
        named.update(reference[0] for reference in scanner.references)
    edges: list = []  # (from path, from context, to path, to context, condition)
    for path, scanner in scanners.items():
        loaded = scanner._loaded
        references = list(scanner.references)
        references += [("main", context, condition, None) for name, context, condition, _ in scanner.references
                       if name == "run"]  # tf.app.run() / absl app.run(main) call the module's main
        for name, context, condition, stored_in in references:
            if stored_in and not any(target in loaded for target in stored_in):
                continue  # stored in a variable nothing reads (`host_call = (host_call_fn, ...)`, never passed)
            for target in by_name.get(name, ()):
                edges.append((path, context, *target, condition))
        for context, (name, kind, owner, registered) in scanner.defines.items():
            parent = context.rpartition(".")[0] or None
            if kind == "method":
                if name not in named or (name.startswith("__") and name.endswith("__")):
                    edges.append((path, owner, path, context, None))  # called by a framework when the class is used
            elif registered:  # a gradient function runs only when its op is in a graph being differentiated
                edges.append((path, parent if parent in scanner.defines else None, path, context,
                              registered if isinstance(registered, str) else None))
    for path, scanner in scanners.items():  # a local module's top level runs where it is imported
        for target, context, condition in scanner.imports:
            edges.append((path, context, target, None, condition))
    state = {(script, None): None}
    if script not in scanners:  # (no entry script: every module counts as run)
        state.update({(path, None): None for path in scanners})
    entry = scanners.get(script)
    if entry is not None:
        own = {name for context, (name, kind, _, _) in entry.defines.items() if "." not in context}
        if not any(name in own or name == "run" for name, context, _, _ in entry.references if context is None):
            state.update({(script, context): None for context in entry.defines})  # a fragment: all of it counts
    for _ in range(200):
        changed = False
        for from_path, from_context, to_path, to_context, condition in edges:
            outer = state.get((from_path, from_context), UNREACHED)
            if outer is UNREACHED:
                continue
            new = _combine(outer, condition)
            owner = owners.get((to_path, to_context))
            if owner is not None:  # a method runs only if its class is used (`self.make_source_dataset`)
                used = state.get((to_path, owner), UNREACHED)
                if used is UNREACHED:
                    continue
                new = _combine(used, new) if new is None else new
            if _better(new, state.get((to_path, to_context), UNREACHED)):
                state[(to_path, to_context)] = new
                changed = True
        if not changed:
            break
    return state


def unreached(finding, context: str):
    name = context.rpartition(".")[2]
    return replace(finding, status=f"{finding.status}, only if `{name}` is called",
                   detail=f"{finding.detail}; the line is in `{context}`, which nothing the script runs calls (no "
                          f"call of it in the script or its local modules from code that runs): it raises only if "
                          f"something else calls it", error=False)


def conditional(finding, condition: str, context=None):
    where = f"`{context}`, the function it is in," if context else "the module it is in"
    return replace(finding, status=f"{finding.status}, only if {condition}",
                   detail=f"{finding.detail}; {where} is reached (called / imported) only if {condition}: it raises "
                          f"only when the script is started or configured so", error=False)
