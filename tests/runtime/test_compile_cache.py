"""op_compiler_cache_mode / op_compiler_cache_dir: XLA's persistent cache, observed across
processes (TensorFlow reads the cache flag once per process, so every run is a fresh process)."""
import os
import re
import warnings

import pytest

from helpers import options, placeholder_step, session_for, train_in_subprocess
from npurun.runtime import compile_cache, xla_flags

LOG = {"TF_CPP_VMODULE": "device_executable_persistor=2,device_compiler=1", "TF_CPP_MIN_LOG_LEVEL": "0"}
SAVED, LOADED = "Serializing and saving cache entry", "Loading cached entry"


def compile_us(stderr: str) -> int:
    """Total XLA compilation time the process logged (device_compiler VLOG 1), in microseconds."""
    return sum(int(us) for us in re.findall(r"Compilation of XLA executable time: .*? \((\d+) us\)", stderr))


def entries(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_cache_fills_and_a_second_process_compiles_less(tmp_path):
    cache = tmp_path / "cache"
    kwargs = dict(jit_compile="true", op_compiler_cache_mode="enable", op_compiler_cache_dir=str(cache))
    cold, cold_log = train_in_subprocess(env=LOG, **kwargs)
    folder = cache / "kernel_cache"
    filled = entries(folder)
    assert "XlaLaunch" in cold["ops"]
    assert filled and all(name.endswith(".pb") for name in filled)
    assert SAVED in cold_log and LOADED not in cold_log

    warm, warm_log = train_in_subprocess(env=LOG, **kwargs)
    assert LOADED in warm_log and SAVED not in warm_log  # nothing compiled anew
    assert entries(folder) == filled
    assert compile_us(warm_log) < compile_us(cold_log)
    assert not any("TF_XLA_FLAGS" in w for w in cold["warnings"] + warm["warnings"])


def test_force_empties_the_cache_first(tmp_path):
    folder = tmp_path / "kernel_cache"
    folder.mkdir()
    (folder / "stale_entry.pb").write_text("from an older TensorFlow")
    _, log = train_in_subprocess(env=LOG, jit_compile="true", op_compiler_cache_mode="force",
                                 op_compiler_cache_dir=str(tmp_path))
    names = entries(folder)
    assert "stale_entry.pb" not in names and names
    assert SAVED in log and LOADED not in log


def test_default_folder_is_home_atc_data(tmp_path):
    train_in_subprocess(env={"HOME": str(tmp_path)}, jit_compile="true", op_compiler_cache_mode="enable")
    assert entries(tmp_path / "atc_data" / "kernel_cache")


def test_disable_and_debug_levels_other_than_0_and_3_use_no_cache(tmp_path):
    assert compile_cache.cache_dir(options(op_compiler_cache_dir=str(tmp_path))) is None  # disable
    assert compile_cache.cache_dir(options(op_compiler_cache_mode="enable", op_debug_level=1,
                                           op_compiler_cache_dir=str(tmp_path))) is None
    assert compile_cache.cache_dir(options(op_compiler_cache_mode="enable", op_debug_level=3,
                                           op_compiler_cache_dir=str(tmp_path))) == str(tmp_path / "kernel_cache")


def test_too_late_in_this_process_is_a_clear_warning(tmp_path):
    # An earlier session in this (pytest) process has made TensorFlow read TF_XLA_FLAGS already.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with session_for(options(), placeholder_step):
            pass
    with pytest.warns(UserWarning, match="already read TF_XLA_FLAGS.*--tf_xla_persistent_cache_directory"):
        with session_for(options(jit_compile="true", op_compiler_cache_mode="enable",
                                 op_compiler_cache_dir=str(tmp_path)), placeholder_step):
            pass
    assert (tmp_path / "kernel_cache").is_dir()  # created all the same
