"""Acceptance: three Ascend-style training scripts run UNMODIFIED through `npurun run` and learn.

Each script (tests/compat/scripts/) is run in a subprocess by the same handler as `npurun run`
(`python -m npurun.compat run`); its training loss is read from NPUEstimator's log (`loss = <value>,
step = <n>`, once per device loop) or, in sess.run mode, from the script's `step_loss <value>` lines. The loss
must fall: the mean of the last quarter of the reported losses is below half the mean of the first
quarter. A failure shows the AdapterAPIError lines, which name any adapter name whose npurun
target is missing.
"""
import re

import pytest

from .conftest import SCRIPTS, run_compat

# The scripts' own prints (sess.run mode), and NPUEstimator's log: with a device loop the mean loss of
# the loop's steps ("loss = 0.52 (mean of the last 10 steps 0.61), step = 20"), else "loss = 0.52, step = 20".
NUMBER = r"([0-9.eE+-]+|nan|inf)"
LOSS = re.compile(rf"step_loss {NUMBER}|loss = \S+ \(mean of the last \d+ steps {NUMBER}\)|loss = {NUMBER}, step")


def _losses_fall(done, script):
    missing = [line for line in done.stderr.splitlines() if "AdapterAPIError" in line]
    assert done.returncode == 0, (f"{script} failed (exit {done.returncode}); adapter names not available: "
                                  f"{missing or 'none'}\n--- stderr tail ---\n{done.stderr[-4000:]}")
    losses = [float(next(v for v in groups if v)) for groups in LOSS.findall(done.stdout + done.stderr)]
    assert len(losses) >= 8, f"{script}: too few losses reported: {losses}\n{done.stderr[-3000:]}"
    quarter = len(losses) // 4
    first, last = sum(losses[:quarter]) / quarter, sum(losses[-quarter:]) / quarter
    assert last < 0.5 * first, f"{script}: loss did not fall: first quarter {first:.4f}, last quarter {last:.4f}"
    return losses


@pytest.mark.slow
def test_image_classifier_with_npurunconfig_and_npuestimator(tmp_path):
    done = run_compat("run", SCRIPTS / "image_classifier.py", "--model_dir", tmp_path / "model", cwd=tmp_path)
    _losses_fall(done, "image_classifier.py")
    accuracy = float(re.search(r"eval_accuracy ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.9


@pytest.mark.slow
def test_bert_style_npuoptimizer_with_exponential_loss_scaling(tmp_path):
    done = run_compat("run", SCRIPTS / "bert_tiny.py", "--output_dir", tmp_path / "out", cwd=tmp_path)
    _losses_fall(done, "bert_tiny.py")
    accuracy = float(re.search(r"eval_accuracy ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.9


@pytest.mark.slow
def test_sess_run_mode_with_npuoptimizer_configproto_and_set_iteration_per_loop(tmp_path):
    done = run_compat("run", SCRIPTS / "sess_run_mode.py", cwd=tmp_path)
    losses = _losses_fall(done, "sess_run_mode.py")
    steps = [int(s) for s in re.findall(r"global_step (\d+)", done.stdout)]
    assert steps[:2] == [10, 20], f"each sess.run should run 10 training steps: {steps[:5]}"
    assert len(losses) == 30
