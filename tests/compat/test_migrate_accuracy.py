"""Acceptance: a classic tf.estimator script, migrated by `npurun migrate`, runs under npurun and reaches
the accuracy the original reaches under TensorFlow 2.15's own tf.estimator.

The original runs in a TensorFlow 2.15 virtualenv (created by this test's setup on first use and
cached, see tf215_env.py; if it cannot be created the test fails saying why). Tolerance: the two
accuracies on the held-out digits differ by at most 0.03 (absolute), and both exceed 0.9. Both runs
use the same data split, model, optimizer, step count and graph seed; they differ in the input
pipeline's shuffling (TF 2.15's queue-based numpy_input_fn vs. tf.data) and initial values.
"""
import re
import subprocess

import pytest

from .conftest import SCRIPTS, run_compat

TOLERANCE = 0.03


def _accuracy(output):
    found = re.search(r"accuracy ([0-9.]+)", output)
    assert found, output[-3000:]
    return float(found.group(1))


@pytest.mark.slow
def test_migrated_script_matches_tf215_accuracy(tmp_path, tf215_python):
    original = SCRIPTS / "classic_estimator.py"
    reference = subprocess.run([str(tf215_python), str(original), "--model_dir", str(tmp_path / "tf215")],
                               capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-4000:]
    reference_accuracy = _accuracy(reference.stdout)

    migrated = tmp_path / "migrated.py"
    done = run_compat("migrate", original)
    assert done.returncode == 0, done.stderr
    migrated.write_text(done.stdout)
    assert "NPURunConfig(" in done.stdout and "NPUEstimator(" in done.stdout and "device_fn" not in done.stdout
    second = run_compat("migrate", migrated, "--diff")
    assert second.returncode == 0 and second.stdout == "", "a second migrate must change nothing"

    ran = run_compat("run", migrated, "--model_dir", tmp_path / "npurun", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-4000:]
    npurun_accuracy = _accuracy(ran.stdout)

    assert reference_accuracy > 0.9 and npurun_accuracy > 0.9, (reference_accuracy, npurun_accuracy)
    assert abs(npurun_accuracy - reference_accuracy) <= TOLERANCE, (
        f"TF 2.15 tf.estimator: {reference_accuracy:.4f}; migrated under npurun: {npurun_accuracy:.4f}")
