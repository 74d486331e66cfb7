"""Acceptance (issue 25): the premade estimators and heads, trained by the same script under TensorFlow
2.15's own tf.estimator and under `npurun run` on TensorFlow 2.21 (scripts/premade_oracle.py): the same
variable names and shapes from scratch, a TF 2.15 checkpoint restored and trained on, and then the same
variable values, evaluation metrics and predictions within float tolerance."""
import json
import subprocess

import numpy as np
import pytest

from .conftest import SCRIPTS, run_compat

pytestmark = pytest.mark.slow  # one TF 2.15 and one npurun run of 14 estimators (~75 s of CPU), shared by the module

SCRIPT = SCRIPTS / "premade_oracle.py"
CASES = ("dnn_classifier", "dnn_classifier_vocab3", "dnn_regressor", "dnn_multilabel", "dnn_multihead",
         "linear_classifier", "linear_classifier3_mean", "linear_regressor", "linear_poisson", "combined_classifier",
         "combined_regressor", "baseline_classifier", "baseline_regressor", "baseline_logistic")
TOLERANCE = dict(rel=1e-4, abs=1e-5)


def _result(output):
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    assert lines, output[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def observed(tmp_path_factory, tf215_python):
    """Both runs, once for the module: TF 2.15 (which leaves its step-3 checkpoints) and then npurun."""
    base = tmp_path_factory.mktemp("premade")
    checkpoints = base / "ckpt3"
    reference = subprocess.run([str(tf215_python), str(SCRIPT), str(base / "tf215"), str(checkpoints), "--reference"],
                               capture_output=True, text=True, timeout=900, cwd=base,
                               env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert reference.returncode == 0, reference.stderr[-4000:]
    ran = run_compat("run", SCRIPT, base / "npurun", checkpoints, cwd=base, timeout=900)
    assert ran.returncode == 0, ran.stderr[-4000:]
    return _result(reference.stdout), _result(ran.stdout)


def test_every_case_ran(observed):
    expected, got = observed
    assert sorted(expected) == sorted(got) == sorted(CASES + ("imports",))


def test_tf1_era_module_paths(observed):
    """tensorflow.python.estimator.canned.* / tensorflow_estimator.python.estimator.{canned,head}.* import and
    give the same classes, keys, optimizer defaults and (TF 1 and 2.x head) losses."""
    expected, got = (run["imports"] for run in observed)
    assert got["classes"] == expected["classes"]
    assert got["keys"] == expected["keys"]
    assert got["adagrad"] == pytest.approx(expected["adagrad"])
    assert got["losses"] == pytest.approx(expected["losses"], rel=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_same_as_tf215(observed, case):
    expected, got = (run[case] for run in observed)
    # The same variables, named and shaped as TF 2.15 names them, from scratch (its checkpoints restore).
    assert got["names"] == expected["names"]
    # Trained on from TF 2.15's step-3 checkpoint for 3 more steps: the same numbers.
    assert sorted(got["values"]) == sorted(expected["values"])
    for name, value in expected["values"].items():
        if isinstance(value[0], str):
            assert got["values"][name] == value, name
        else:
            np.testing.assert_allclose(got["values"][name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    assert sorted(got["metrics"]) == sorted(expected["metrics"])
    for key, value in expected["metrics"].items():
        assert got["metrics"][key] == pytest.approx(value, **TOLERANCE), key
    assert len(got["predictions"]) == len(expected["predictions"]) == 4
    for mine, theirs in zip(got["predictions"], expected["predictions"]):
        assert sorted(mine) == sorted(theirs)
        for key, value in theirs.items():
            if value and isinstance(value[0], str):
                assert mine[key] == value, key
            else:
                np.testing.assert_allclose(mine[key], value, rtol=1e-4, atol=1e-5, err_msg=key)
