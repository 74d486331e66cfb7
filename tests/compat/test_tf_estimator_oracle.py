"""Acceptance: one tf.estimator script, unchanged, observes the same under TensorFlow 2.15's own
tf.estimator and under `npurun run` on TensorFlow 2.21: checkpoint steps, Keras and v1 metric values,
predictions, export signatures and served values, the bytes export path, config.model_dir."""
import json
import subprocess

import pytest

from .conftest import SCRIPTS, run_compat


def _observed(output):
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    assert lines, output[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.slow
def test_same_script_same_observations_as_tf215(tmp_path, tf215_python):
    script = SCRIPTS / "tf_estimator_oracle.py"
    reference = subprocess.run([str(tf215_python), str(script)], capture_output=True, text=True, timeout=900,
                               cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-4000:]
    ran = run_compat("run", script, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-4000:]
    expected, observed = _observed(reference.stdout), _observed(ran.stdout)
    assert observed.keys() == expected.keys()
    for key in expected:
        assert observed[key] == pytest.approx(expected[key], rel=1e-4, abs=1e-5) if key in ("eval", "eval2") \
            else observed[key] == expected[key], (key, expected[key], observed[key])
