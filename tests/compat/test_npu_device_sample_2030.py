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


def test_each_keras_function_dumps_into_its_own_directory_so_no_step_overwrites_another(ran):
    # --data_dump_flag=True --data_dump_step=0 with fit(validation_data=...) and a second compile + fit (as
    # gradient_centralization does): fit's validation (Keras' test function) and the second compile's new train
    # function count their steps from 0 too and trace the same op names; in one directory their step 0 overwrote
    # the first train step's files under the first records
    import numpy as np

    report, _profiles, dumps = ran
    assert all(np.isfinite(report["loss"])), report
    found = sorted(glob.glob(str(dumps / "*" / "index.jsonl")))
    assert sorted(os.path.basename(os.path.dirname(i)).split("-")[0] for i in found) == ["eval", "train", "train"]
    for index in found:
        records = [json.loads(line) for line in open(index)]
        files = [r["file"] for r in records]
        assert {r["step"] for r in records} == {0} and len(files) == len(set(files)), index
        assert any(r["op"].endswith("head/MatMul") and r["io"] == "output" for r in records), index
        for record in records:
            value = np.load(os.path.join(os.path.dirname(index), record["file"]))
            assert list(value.shape) == record["shape"], record
            if value.size and value.dtype.kind == "f":
                assert np.isclose(float(value.max()), record["stats"]["max"], rtol=1e-6), record


def test_dumped_constants_are_named_by_their_graph_names(ran):
    # TensorFlow's op callback is given the name a constant asked for ("x", "Const", "dim"), not the graph's unique
    # name (RMSprop/mul/x, sequential/flatten/Const): records of different constants shared one file
    _report, _profiles, dumps = ran
    for index in glob.glob(str(dumps / "*" / "index.jsonl")):
        records = [json.loads(line) for line in open(index)]
        constants = [r for r in records if r["type"] == "Const"]
        assert constants, index
        for record in constants:
            assert record["tensor"] == record["op"] + ":0", record
