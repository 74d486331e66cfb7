"""Process-wide XLA flags: applied before TensorFlow reads them, or a clear warning when too late."""
import json
import warnings

import pytest

from helpers import options, placeholder_step, run_python, session_for
from npurun.runtime import xla_flags
from npurun.runtime.contributors import build_plan


def test_merge_appends_and_ours_replace_same_named_flags():
    assert xla_flags.merge("--a=1 --b=2", ["--b=3", "--c"]) == "--a=1 --b=3 --c"
    assert xla_flags.merge("", ["--x=1"]) == "--x=1"


def test_fresh_process_applies_both_variables_and_leaves_no_trace(tmp_path):
    result = run_python(f"""
        import json, os, warnings
        from helpers import options
        from npurun.runtime import xla_flags
        from npurun.runtime.contributors import build_plan
        from tensorflow.python.client import pywrap_tf_session as c_api
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = build_plan(options(jit_compile="true", op_debug_level=3, debug_dir={str(tmp_path)!r},
                                      op_compiler_cache_mode="enable", op_compiler_cache_dir={str(tmp_path)!r}),
                              "train")
        print("RESULT " + json.dumps({{
            "warnings": [str(w.message) for w in caught],
            "tf": sorted(xla_flags.parsed_state("TF_XLA_FLAGS")),
            "xla": sorted(xla_flags.parsed_state("XLA_FLAGS")),
            "env": [os.environ.get("TF_XLA_FLAGS"), os.environ.get("XLA_FLAGS")],
            "plan_env": plan.env,
            "sentinel_reset": c_api.TF_GetXlaConstantFoldingDisabled(),
            "kernel_meta": sorted(os.listdir({str(tmp_path / "kernel_meta")!r})),
        }}))
    """)
    data = json.loads(next(l for l in result.stdout.splitlines() if l.startswith("RESULT ")).split(" ", 1)[1])
    assert not [w for w in data["warnings"] if "already read" in w]
    assert f"--tf_xla_persistent_cache_directory={tmp_path}/kernel_cache" in data["tf"]
    assert f"--xla_dump_to={tmp_path}/kernel_meta" in data["xla"]
    assert data["env"] == [None, None]  # the process environment is restored after TensorFlow read it
    assert "--xla_dump_hlo_as_proto" in data["plan_env"]["XLA_FLAGS"]
    assert data["sentinel_reset"] == 0  # the detection flag is back to its default
    assert data["kernel_meta"] == []  # the probe's dump was removed


def test_xla_flags_after_a_compilation_in_this_process_warn(tmp_path):
    # Make sure this process has compiled with XLA already (the compiler then has read XLA_FLAGS).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with session_for(options(jit_compile="true"), placeholder_step) as built:
            built.run()
    with pytest.warns(UserWarning, match="already read XLA_FLAGS.*--xla_dump_to"):
        build_plan(options(jit_compile="true", op_debug_level=1, debug_dir=str(tmp_path)), "train")
    assert xla_flags.parsed_state(xla_flags.XLA_FLAGS) != "unparsed"
