"""The rank environment `npurun run` gives a script, in one place: the run sets it, `npurun check` reads it.

Ascend's one-device launch scripts export RANK_SIZE=1 / RANK_ID=0 and the device index variables, and many
scripts read them bare (`int(os.getenv('RANK_SIZE'))`: 63 ModelZoo folders). With no rank environment at
all, a run is that one rank; `npurun launch` and explicit settings are kept as they are. Check judges a
branch such as DIN's `if rank_size == 1:` with the same values the run will have.
"""
from __future__ import annotations

import os
from typing import Mapping

RANK_VARIABLES = ("RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "TF_CONFIG")
ONE_RANK = {"RANK_SIZE": "1", "RANK_ID": "0"}
# The device index Ascend's 1p launch scripts export next to RANK_ID (each name is read bare by some scripts:
# `int(os.getenv('DEVICE_ID'))` 43 ModelZoo folders, DEVICE_INDEX 30, ASCEND_DEVICE_ID 16).
DEVICE_VARIABLES = ("ASCEND_DEVICE_ID", "DEVICE_ID", "DEVICE_INDEX")
# The server's index among the job's servers, exported by 37 Ascend launch files and read bare by scripts
# (`int(os.environ['RANK_INDEX'])`, 15 ModelZoo folders): 0 for the one server of a one-rank run.
ONE_RANK_ONLY = DEVICE_VARIABLES + ("RANK_INDEX",)


def rank_defaults(environ: Mapping[str, str] | None = None) -> dict:
    """The rank variables a script run here gets because they are unset in `environ` (os.environ)."""
    environ = os.environ if environ is None else environ
    defaults = {}
    if not any(name in environ for name in RANK_VARIABLES):
        defaults.update(ONE_RANK)
    # A one-rank run is device 0, as Ascend's 1p launch scripts export it. Not for several ranks: npurun reads
    # ASCEND_DEVICE_ID as the session's device, which `npurun launch` / the user choose per rank.
    rank_size = environ.get("RANK_SIZE", defaults.get("RANK_SIZE"))
    if rank_size == "1" and environ.get("RANK_ID", defaults.get("RANK_ID", "0")) == "0":
        defaults.update({name: "0" for name in ONE_RANK_ONLY if name not in environ})
    return defaults


def run_value(name: str, environ: Mapping[str, str] | None = None):
    """What `os.environ.get(name)` gives a script under `npurun run` here: set, defaulted, or None."""
    environ = os.environ if environ is None else environ
    if name in environ:
        return environ[name]
    return rank_defaults(environ).get(name)
