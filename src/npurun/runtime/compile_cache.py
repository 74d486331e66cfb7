"""The compilation cache: `op_compiler_cache_mode` and `op_compiler_cache_dir`.

Rules:
  - The cache is XLA's persistent compilation cache (TensorFlow's
    `--tf_xla_persistent_cache_directory` in TF_XLA_FLAGS): each compiled XLA cluster is
    serialised there, and a later process compiling the same cluster for the same shapes loads it
    instead of compiling (TensorFlow logs "Loading cached entry" at VLOG 2 of
    device_executable_persistor).
  - The folder is `<op_compiler_cache_dir>/kernel_cache`; op_compiler_cache_dir defaults to
    `$HOME/atc_data`. Both are created when missing. A kernel_cache that is a symbolic link is
    refused (`safe_files.PlantedLinkError` naming it): nothing is cached or deleted through it.
  - `disable` (default): no cache. `enable`: use it. `force`: empty kernel_cache first (once per
    process and folder, so a later evaluation plan does not throw away what training just
    compiled), then use it.
  - Caching works only with op_debug_level 0 or 3 (the seed's rule): with 1, 2 or 4 the cache is
    not set up (NPURunConfig already warned at construction), because dumps need real compiles.
  - The flag is process-wide and read once, as soon as TensorFlow lists its devices: this
    contributor runs first in the plan and applies it at once; see `xla_flags` for how, and for the
    UserWarning when it is too late (TensorFlow already listed devices in this process).
"""
from __future__ import annotations

import os

from .. import safe_files
from . import xla_flags
from .plan import Options, SessionPlan

CACHEABLE_DEBUG_LEVELS = (0, 3)
CACHE_SUBDIR = "kernel_cache"
_forced: set = set()  # kernel_cache folders already emptied by `force` in this process


def cache_root(options: Options) -> str:
    """op_compiler_cache_dir, or $HOME/atc_data when it is not set."""
    return options.get("op_compiler_cache_dir") or os.path.join(os.path.expanduser("~"), "atc_data")


def cache_dir(options: Options) -> str | None:
    """The kernel_cache folder in use, or None when caching is off for these options."""
    if options.get("op_compiler_cache_mode", "disable") == "disable":
        return None
    if options.get("op_debug_level", 0) not in CACHEABLE_DEBUG_LEVELS:
        return None
    return os.path.abspath(os.path.join(cache_root(options), CACHE_SUBDIR))


WHAT = "op_compiler_cache_dir's kernel_cache folder"


def empty_folder(path: str) -> None:
    """Remove everything inside `path`, keeping the folder itself; never through a link."""
    safe_files.empty_dir(path, WHAT)


def contribute(options: Options, mode: str, plan: SessionPlan) -> None:
    folder = cache_dir(options)
    if folder is None:
        return
    # TensorFlow writes the cache files and `force` deletes them: kernel_cache must be a real folder.
    safe_files.make_dir(folder, WHAT)
    if options["op_compiler_cache_mode"] == "force" and folder not in _forced:
        empty_folder(folder)
        _forced.add(folder)
    xla_flags.request(plan, xla_flags.TF_XLA_FLAGS, "--tf_xla_persistent_cache_directory=" + folder)
    # Now, before any contributor lists TensorFlow's devices (which makes TensorFlow read the flags).
    xla_flags.apply(plan, xla_flags.TF_XLA_FLAGS)
