"""TF2 ModelZoo-style npu_device scripts run unmodified under `npurun run` / `npurun launch`: each trains
(loss falls) and shows its options' effect (scripts in npu_device_scripts/, written for these tests)."""
import glob
import json
import os
import subprocess
import sys

import pytest

from .conftest import run_compat

SCRIPTS = os.path.join(os.path.dirname(__file__), "npu_device_scripts")
pytestmark = pytest.mark.slow


def _run(tmp_path, name, *args, env=None):
    out = tmp_path / f"{name}.json"
    done = run_compat("run", os.path.join(SCRIPTS, f"{name}.py"), out, *args, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text()), done


def _falls(losses):
    return losses[-1] < 0.6 * losses[0]


BF16 = {"TF_ENABLE_ONEDNN_OPTS": "1", "NPURUN_FORCE_LOW_PRECISION": "1"}


def test_keras_fit_runs_its_matmuls_in_bfloat16_and_the_mixlist_keeps_them_float32(tmp_path):
    report, done = _run(tmp_path, "keras_fit", env=BF16)
    assert report["eager"] is True  # TensorFlow 2 stays TensorFlow 2
    assert _falls(report["loss"]), report
    assert report["matmul_dtypes"] == ["bfloat16"]  # the executed graph, after grappler
    assert "ops run eagerly one by one outside a tf.function stay float32" in done.stderr
    mixlist = tmp_path / "mixlist.json"
    mixlist.write_text('{"black-list": {"to-add": ["MatMul"]}}')
    report, _ = _run(tmp_path, "keras_fit", mixlist, env=BF16)
    assert _falls(report["loss"]) and report["matmul_dtypes"] == ["float32"]


def test_custom_loop_dumps_the_chosen_steps_and_the_loss_scale_optimizer_skips_an_overflow(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    report, _ = _run(tmp_path, "custom_loop", dumps)
    assert _falls(report["loss"])
    assert report["skipped"] == {"unchanged": True, "last_step_finite": False}
    assert report["iterations"] == 30  # the skipped step still counts
    (index,) = glob.glob(str(dumps / "*" / "index.jsonl"))
    records = [json.loads(line) for line in open(index)]
    assert {r["step"] for r in records} == {1, 3}
    matmuls = [r for r in records if r["type"] == "MatMul" and r["io"] == "output"]
    assert {r["step"] for r in matmuls} == {1, 3}
    for record in matmuls:
        assert os.path.isfile(os.path.join(os.path.dirname(index), record["file"]))


def test_bert_like_block_with_fast_gelu_and_fused_layer_norm_trains(tmp_path):
    report, _ = _run(tmp_path, "bert_block")
    assert report["loss"][-1] < report["loss"][0] - 0.1, report
    assert report["fast_gelu_max_error"] < 1e-5 and report["fast_gelu_grad_matches"]
    assert report["layer_norm_max_error"] < 1e-4 and report["mean_shape"] == [4, 1]
    assert abs(report["eager_gelu"] - report["exact_gelu_1"]) < 1e-6  # ops.gelu: TensorFlow's gelu when eager


def test_enable_v1_gives_tensorflow_1_behaviour_and_npu_init_names(tmp_path):
    report, _ = _run(tmp_path, "enable_v1")
    assert report["eager"] is False and _falls(report["loss"])


def test_two_ranks_keras_job_with_the_distributed_optimizer_wrapper(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE")}
    env.update(CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-m", "npurun.distribute.launch", "-n", "2", "--startup-timeout", "60",
                           os.path.join(SCRIPTS, "two_ranks.py"), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["size"] for r in reports] == [2, 2] and [r["batch"] for r in reports] == [32, 32]
    assert reports[0]["initial"] != reports[1]["initial"]  # different initialisations, then broadcast
    assert reports[0]["final_hex"] == reports[1]["final_hex"]  # identical weights after training
    for report in reports:
        assert _falls(report["loss"])


def test_keras_and_tf2_era_private_names_of_npu_device_scripts(tmp_path):
    # TF 2.x-era ModelZoo scripts mix `tf.keras`, `from tensorflow.keras import layers`, standalone `keras`
    # (vendored npu_convert_dropout.py: `from keras.utils import control_flow_util`) and tensorflow.python.keras;
    # the adapter's npu_ops.py vendored beside it (24 folders) seeds dropout with the graph's `_last_id` once a
    # global seed is set (pointnet_ID2531: tf.random.set_seed(1234), then Keras fit); `import tensorflow.keras.backend
    # as K` (improved-bagan-gp_ID3132) keeps tf.keras tf-keras; Keras 2.x's `lr=` (face_recognition_TF2_ID3613's SGD)
    # is the learning rate
    library = tmp_path / "site-packages"  # a Keras 2.15 library (tensorflow-addons' utils/types.py: 9 folders)
    library.mkdir()
    (library / "keras2_library.py").write_text("from keras.src.engine import keras_tensor\n")
    script = tmp_path / "keras_paths.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(library)!r})\nimport keras2_library\n"
        "import tensorflow as tf\nimport tensorflow.keras.backend as K\nfrom tensorflow.keras import Model\n"
        "import keras\nfrom keras.utils import control_flow_util\n"
        "from tensorflow.keras import layers\nfrom tensorflow.python.keras.datasets.cifar import load_batch\n"
        "from keras.optimizer_v2 import optimizer_v2\nfrom tensorflow.python.framework import ops\n"
        "import npu_device\n"
        "tf.random.set_seed(1234)\n"
        "@tf.function\ndef seeded(x):\n    y = x * 2.0\n    first = ops.get_default_graph()._last_id\n"
        "    z = y + 1.0\n    return tf.constant([first, ops.get_default_graph()._last_id])\n"
        "ids = seeded(tf.constant(1.0)).numpy()\n"
        "print(tf.executing_eagerly(), keras.__name__, layers.Dense is tf.keras.layers.Dense, load_batch.__module__,"
        " isinstance(tf.keras.Sequential([layers.Dense(2)]), keras.Model),"
        " isinstance(tf.keras.optimizers.legacy.SGD(), optimizer_v2.OptimizerV2), 0 < ids[0] < ids[1],"
        " tf.Graph()._last_id, K.__name__.split('.')[0], Model.__module__.split('.')[0],"
        " tf.keras.Model.__module__.split('.')[0], round(float(tf.keras.optimizers.SGD(lr=0.0005).learning_rate), 7),"
        " float(tf.keras.optimizers.Adam(lr=0.5, learning_rate=0.25).learning_rate),"
        " keras2_library.keras_tensor.__name__)\n")
    done = run_compat("run", script, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "tf_keras.src", "True", "tf_keras.src.datasets.cifar", "True", "True",
                                   "True", "0", "tf_keras", "tf_keras", "tf_keras", "0.0005", "0.25",
                                   "tf_keras.src.engine.keras_tensor"]
