"""`npurun check script.py`: what a script asks of the NPU adapter, and what each thing does here.

A static report (the script and the local modules it imports are parsed with `ast`, never run;
TensorFlow is not imported) of:

- every `NPURunConfig(...)` / `tf.estimator.RunConfig(...)` keyword argument: the option's status here
  (`effect`, `effect (GPU only)`, `accepted, no effect here`, `not supported`, `not implemented yet`) and
  mechanism from `npurun.config.OPTIONS`; literal values are validated as NPURunConfig would;
- every `custom_op.parameter_map["key"]` entry of a hand-written `NpuOptimizer` ConfigProto: the option
  it sets (field and literal value checked as NPURunConfig checks them), or that it is ignored;
- every adapter name the script uses (`npu_bridge...`, `hccl...`, including names brought in by
  `from npu_bridge.npu_init import *`), with its coverage-table status and whether its npurun target
  is installed; and names a module uses but never defines while relying on such a star import,
  which the star import does not bring in here (NameError);
- TensorFlow names that TensorFlow 2.21 lacks: `tf.estimator.*`, `tf.compat.v1.layers.*`, TensorFlow
  1 API that `import tensorflow as tf` gets from npurun's TF1 world (`tf.Session`, `tf.flags`, ...),
  `tf.contrib` names (from the TF1 world's contrib table) and TensorFlow 1 module paths
  (`tensorflow.python...`, `tensorflow.examples...`): provided by `npurun run`, or raising here
  (see `check_tensorflow`);
- Horovod calls (`npurun migrate` rewrites the common ones).

Local modules are those the script's imports find next to it (the script's directory is the first
entry of `sys.path`), and, inside them, their relative imports; each is scanned once.

Exit status 1 when something the script uses will raise here (an unsupported or unavailable name, an
unknown option, an invalid literal value, a name TensorFlow 1's API or the contrib table lacks), else 0.

The work is split: `check_scanner` visits one module (`conditions` tells which flag branches run,
`installed` which names installed packages lack), `check_options` reads NPURunConfig keywords and
parameter_map entries, `check_report` holds `Finding` and prints the report; this module follows the
local modules and gives the entry points.
"""
from __future__ import annotations

import os
from dataclasses import asdict

from ..script_guard import ScriptRefused, parse_within_limits, read_script
from .report import Finding, render_json, render_text  # noqa: F401 - the report, also reached from here
from .conditions import parse_argv
from .npu_device_scripts import tensorflow2_script
from .reach import UNREACHED, conditional, reachable, unreached
from .scanner import ModuleScanner


def _holds_distributions(folder: str) -> bool:
    """A folder of installed packages (`pip install --target DIR`: it holds `*.dist-info` records), not the
    script's own folder put on PYTHONPATH: its modules are installed packages, not scanned as the script's."""
    try:
        return any(name.endswith((".dist-info", ".egg-info")) for name in os.listdir(folder))
    except OSError:
        return False


_MODEL_FOLDER_MARKERS = ("README.md", "README", "LICENSE", "requirements.txt", "setup.py", ".git")


class _Project:
    """The script and the local modules reached from it: resolved next to the script, scanned once each."""

    def __init__(self, script_path: str):
        self.root = os.path.dirname(os.path.abspath(script_path))
        self.scanners: dict = {}  # path -> ModuleScanner (the script's included)

    def resolve(self, module: str, level: int, from_path: str):
        """The file of a local module (`module` with `level` leading dots, imported from `from_path`), or None."""
        if level:
            base = os.path.dirname(os.path.abspath(from_path))
            for _ in range(level - 1):
                base = os.path.dirname(base)
        else:
            base = self.root
        parts = module.split(".") if module else []
        bases = [base] if level else [base, *self._package_roots(parts[0] if parts else "", dotted=len(parts) > 1)]
        for base in bases:
            candidate = os.path.join(base, *parts)
            for path in (candidate + ".py", os.path.join(candidate, "__init__.py")):
                if parts and os.path.isfile(path) and os.path.abspath(path).startswith(base + os.sep):
                    return os.path.abspath(path)
        return None

    def _package_roots(self, top: str, dotted: bool = False):
        """Where a script that sits inside its own package finds that package (`avod/experiments/run_training.py`
        importing `avod`: its launch script puts the folder above `avod` on PYTHONPATH), and the PYTHONPATH
        entries check was started with."""
        if not top:
            return []
        found, folder = [], self.root
        for _ in range(6):
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            if os.path.basename(folder) == top and os.path.isfile(os.path.join(folder, "__init__.py")):
                found.append(parent)
            folder = parent
        own = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
            entry = os.path.abspath(entry) if entry else ""
            if (entry and entry != own and os.sep + "site-packages" not in entry and os.sep + "dist-packages"
                    not in entry and not _holds_distributions(entry)
                    and (os.path.isdir(os.path.join(entry, top)) or os.path.isfile(os.path.join(entry, top + ".py")))):
                found.append(entry)  # the script's own folders put on the path; installed packages stay installed
        if dotted and self.changes_sys_path() and not any(s.adds_outside_path for s in self.scanners.values()):
            # The scripts add to sys.path (EDVR_ID0056's tools/main.py: `sys.path.append('.')`, run from the model
            # folder, imports `ascendcv.utils.misc`): where the model folder has the package `top`, its submodules
            # are too (`top` itself is reported "found through sys.path" by the scanner, and followed).
            for path in self.in_model_folder(top):
                root = os.path.dirname(os.path.dirname(path) if path.endswith(os.sep + "__init__.py") else path)
                if root not in found and root != self.root:
                    found.append(root)
        return found

    def changes_sys_path(self) -> bool:
        return any(scanner.changes_sys_path for scanner in self.scanners.values())

    def model_folder(self) -> str:
        """The folder the script's model lives in: the nearest of the script's folder and its three parents that
        has a README, LICENSE, requirements.txt, setup.py or .git (ModelZoo's model folders do), else the parent."""
        folder = self.root
        for _ in range(4):
            if any(os.path.exists(os.path.join(folder, marker)) for marker in _MODEL_FOLDER_MARKERS):
                return folder
            folder = os.path.dirname(folder)
        return os.path.dirname(self.root)

    def in_model_folder(self, top: str) -> list:
        """Modules or packages named `top` anywhere in the model folder (a few levels deep, at most 3)."""
        if not hasattr(self, "_tree"):
            self._tree = {}
            base = self.model_folder()
            for folder, dirs, files in os.walk(base):
                depth = folder[len(base):].count(os.sep)
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < 5)
                for name in files:
                    if name.endswith(".py"):
                        self._tree.setdefault(name[:-3], []).append(os.path.join(folder, name))
                for name in dirs:  # a package, or a folder without __init__.py (a namespace package)
                    init = os.path.join(folder, name, "__init__.py")
                    self._tree.setdefault(name, []).append(init if os.path.isfile(init) else os.path.join(folder, name))
                if sum(map(len, self._tree.values())) > 20000:
                    break
        return sorted(self._tree.get(top, []))[:3]

    def scan(self, path: str, source: str | None = None):
        if path in self.scanners:
            return self.scanners[path]
        scanner = self.scanners[path] = ModuleScanner(self, path)  # registered first: import cycles end here
        if source is None:
            try:
                source, _ = read_script(path)
            except (OSError, ScriptRefused):
                return scanner
        try:
            tree = parse_within_limits(source, path)
        except (SyntaxError, ScriptRefused):
            if path == self.script:
                raise
            return scanner
        scanner.visit(tree)
        scanner.finish()
        return scanner

    def findings(self, script_path: str, source: str) -> list:
        self.script = os.path.abspath(script_path)
        self.tf2 = tensorflow2_script(self.script)
        self.scan(self.script, source)
        found = []
        changed = any(scanner.changes_sys_path for scanner in self.scanners.values())
        reached = reachable(self.scanners, self.script)
        for path, scanner in self.scanners.items():
            relative = "" if path == self.script else os.path.relpath(path, self.root)
            for f, context in zip(scanner.findings, scanner.finding_contexts):
                if f.error:  # does the run reach the function (or the module, for top-level code) it is in?
                    state = reached.get((path, context), UNREACHED)
                    if state is UNREACHED and context is None:
                        state = None  # a module scanned through an import check does not follow: counted
                    f = (f if state is None else unreached(f, context) if state is UNREACHED
                         else conditional(f, state, context))
                if changed and f.section == "imports" and f.status == "not installed" and "model folder" not in f.detail:
                    f = Finding(**{**asdict(f), "status": "not found here", "error": False, "detail":
                                   "not next to the script nor installed; the scripts add to sys.path, so it may "
                                   "be found there (not checked)"})
                found.append(Finding(**{**asdict(f), "file": relative}))
        return sorted(found, key=lambda f: (f.file != "", f.file, f.line, f.section, f.name))


def check_source(source: str, filename: str = "<script>", argv=()) -> list:
    """The findings for one script and the local modules next to it that it imports, script first, in
    line order. `argv`: the arguments the script is started with; flag branches are judged with them (else
    with the flags' literal defaults)."""
    project = _Project(filename)
    project.argv_flags = parse_argv(argv)
    return project.findings(filename, source)


def check_file(path: str, argv=()) -> list:
    """The findings for the script at `path` (see `check_source`); ScriptRefused when it is past
    `script_guard`'s limits or not decodable."""
    return check_source(read_script(path)[0], path, argv)
