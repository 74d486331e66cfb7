"""What the third draw of real TensorFlow2 ModelZoo npu_device scripts (docs/compat.md, random.Random(2030)) needed:
its two keras_sample scripts reading a tfds dataset (gradient_centralization_ID2508, learnable_resizer_ID2518) take
the NPU's profiling and dump branches from their flags. A script of our own in that style
(npu_device_scripts/keras_two_fits.py), run once with `npurun run` for the whole file."""
import glob
import json
import os

import pytest

from .conftest import run_compat

SCRIPTS = os.path.join(os.path.dirname(__file__), "npu_device_scripts")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    root = tmp_path_factory.mktemp("keras_two_fits")
    profiles, dumps = root / "profiling", root / "dumps"
    dumps.mkdir()
    done = run_compat("run", os.path.join(SCRIPTS, "keras_two_fits.py"), f"--report={root / 'report.json'}",
                      "--profiling=True", f"--profiling_dump_path={profiles}",
                      "--data_dump_flag=True", f"--data_dump_path={dumps}", "--data_dump_step=0",
                      cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((root / "report.json").read_text()), profiles, dumps


def test_profiling_options_of_the_keras_sample_scripts_write_a_trace_under_their_output(ran):
    # --profiling=True sets profiling_config.enable_profiling and the JSON profiling_options (output, training_trace,
    # task_trace, aicpu, aic_metrics, fp_point, bp_point) before npu_device.open(): 65 ModelZoo folders do so;
    # open() read the parsed options' output as a dict and raised TypeError
    _report, profiles, _dumps = ran
    (trace,) = glob.glob(str(profiles / "npu_device-*" / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert os.path.getsize(trace) > 0
