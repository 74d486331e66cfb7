"""docs/compat.md, generated: the coverage tables rendered around the prose of `compat_prose`.

`python -m npurun.compat docs > docs/compat.md`; tests/compat/test_aliases.py fails when the file is stale.
"""
from __future__ import annotations

from ..adapter.tables import MODULES, TF_NAMESPACES
from ..tf1 import contrib
from ..names.coverage import describe


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown() -> str:
    """docs/compat.md: the coverage table and how to use `npurun run`, `migrate` and `check`."""
    from .compat_prose import FOOTER, HEADER

    lines = [HEADER.rstrip("\n"), ""]
    counts: dict[str, int] = {}
    for module in MODULES.values():
        if module.package:
            continue
        for entry in module.names.values():
            counts[entry.status] = counts.get(entry.status, 0) + 1
    lines.append("Totals over the module tables (a name re-exported by `npu_init` counts again there): "
                 + ", ".join(f"{status}: {n}" for status, n in sorted(counts.items())) + ".")
    lines.append("")
    for module in [*MODULES.values(), *TF_NAMESPACES.values()]:
        if module.name == "tensorflow.estimator":
            lines += ["## TensorFlow names provided while active", ""]
        lines.append(f"### `{module.name}`" + (" (package)" if module.package else ""))
        lines.append("")
        lines.append(module.doc)
        lines.append("")
        lines.append("| name | status | here |")
        lines.append("|---|---|---|")
        for name, entry in module.names.items():
            lines.append(f"| `{name}` | {entry.status} | {_cell(describe(entry))} |")
        lines.append("")
    from .compat_prose import NPU_DEVICE, REAL_SCRIPTS, TF1_WORLD

    lines += [NPU_DEVICE.rstrip("\n"), "", render_global_options().rstrip("\n"), "", TF1_WORLD.rstrip("\n"), "",
              render_contrib().rstrip("\n"), "", REAL_SCRIPTS.rstrip("\n"), ""]
    lines.append(FOOTER.rstrip("\n"))
    return "\n".join(lines) + "\n"


def render_global_options() -> str:
    """The table of `npu_device.global_options()`: every attribute, its kind under TensorFlow 2 and why."""
    from ..adapter.npu_device import configs

    lines = ["### `npu_device.global_options()`", "",
             "Every attribute, with its default, its kind here under TensorFlow 2 and what it does (or why it "
             "does nothing). Rows of NPURunConfig's table keep its validator, error and kind, except where "
             "TensorFlow 2's runtime cannot honour what a tf.compat.v1 session does (those warn when set). Defaults "
             "are the TF 2 adapter's; where they differ from NPURunConfig's the row says so.", "",
             "| option | default | kind here | what it does here |", "|---|---|---|---|"]
    for name, option, value, _set in configs.new_config().items():
        status, why = configs.kind_here(name, option)
        if name in configs.TF2_DEFAULTS:
            why = f"{why} (default: {configs.TF2_DEFAULTS[name][1]})"
        lines.append(f"| `{name}` | `{value!r}` | {status} | {_cell(why)} |")
    return "\n".join(lines) + "\n"


def render_contrib() -> str:
    """The `tf.contrib` section: its packages, module tables and deep paths (`npurun.tf1.contrib`)."""
    lines = ["## `tf.contrib` in the TensorFlow 1 world", "",
             "TensorFlow 2 has no `tf.contrib`. Scripts run by `npurun run` get the modules below, chosen by how "
             "many model folders of Ascend's public ModelZoo-TensorFlow use them (counted over its sources; "
             "`tf.contrib.slim` alone: 141 folders). Any other name raises `AdapterAPIError` naming it when used.",
             "", "| module | ModelZoo folders | here |", "|---|---|---|"]
    for name, package in contrib.PACKAGES.items():
        lines.append(f"| `tf.contrib.{name}` | {contrib.MODELZOO_FOLDERS.get(name, '')} | the `{package.replace('_', '-')}` "
                     f"package (`import {package}`) |")
    for name, table in contrib.MODULES.items():
        lines.append(f"| `tf.contrib.{name}` | {contrib.MODELZOO_FOLDERS.get(name, '')} | {len(table)} names, below |")
    for name, why in contrib.UNSUPPORTED_MODULES.items():
        lines.append(f"| `tf.contrib.{name}` | {contrib.MODELZOO_FOLDERS.get(name, '')} | unsupported: {why} |")
    lines += ["", "Deep import paths map to the same packages: " + ", ".join(
        f"`tensorflow.contrib.{path}` → `{target}`" for path, target in contrib.PATHS.items()) + "."]
    lines += ["", "These deep paths import (scripts import them at the top) but every use of their names raises "
              "AdapterAPIError: " + ", ".join(f"`tensorflow.contrib.{path}` ({why})"
                                               for path, why in contrib.IMPORT_ONLY_PATHS.items()) + "."]
    for name, table in contrib.MODULES.items():
        lines += ["", f"### `tf.contrib.{name}`", "", "| name | status | here |", "|---|---|---|"]
        for entry_name, entry in table.items():
            lines.append(f"| `{entry_name}` | {entry.status} | {describe(entry)} |")
    return "\n".join(lines) + "\n"
