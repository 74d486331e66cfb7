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


USER_SCRIPT = """\
import sys
from npurun import EstimatorSpec, NPUEstimator, NPURunConfig
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1


def input_fn():
    x = np.linspace(0, 1, 32, dtype=np.float32).reshape(16, 2)
    return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).repeat().batch(4)


def model_fn(features, labels, mode):
    loss = tf.reduce_mean(tf.square(tf.matmul(features, v1.get_variable("w", [2, 1])) - labels))
    step = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=step)


config = NPURunConfig(model_dir=sys.argv[1], jit_compile="true", op_compiler_cache_mode="enable",
                      op_compiler_cache_dir=sys.argv[2])
NPUEstimator(model_fn, config=config).train(input_fn, max_steps=2)
print("trained")
"""


@pytest.mark.slow
def test_cache_works_in_a_users_fresh_process(tmp_path):
    # `python script.py` as a user runs it, npurun imported first (it imports TensorFlow): none of the test run's TF_* / NPURUN_* settings (the
    # fixture-made processes above set TF_CPP_MIN_LOG_LEVEL=0, which hid the import-time device
    # listing that made TensorFlow read TF_XLA_FLAGS before npurun set the cache folder).
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(USER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "NPURUN_", "XLA_"))}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "model"), str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "trained" in done.stdout
    assert "already read TF_XLA_FLAGS" not in done.stderr, done.stderr[-4000:]
    assert entries(tmp_path / "cache" / "kernel_cache"), done.stderr[-4000:]
