"""Acceptance: TensorFlow 1.15 scripts in the styles of Ascend's public ModelZoo run UNMODIFIED and learn.

Each script of tests/compat/corpus/ is run in a subprocess as `npurun run` runs it (`python -m npurun.compat
run`), the data-parallel one under `npurun launch -n 2`. Losses are read from the scripts' `step_loss <v>`
prints or NPUEstimator's log; the mean of the last quarter must be below half the mean of the first
quarter (see test_scripts._losses_fall). Each test also checks what the script is about (a frozen graph
that reproduces the model, EMA weights restored for evaluation, ranks ending with equal weights, ...).
"""
import re
import subprocess
import sys

import numpy as np
import pytest

from npurun.tf1.mnist_input_data import write_idx

from .conftest import run_compat
from .test_scripts import LOSS, _losses_fall

CORPUS = __import__("pathlib").Path(__file__).parent / "corpus"


def _run(script, *args, tmp_path):
    return run_compat("run", CORPUS / script, *args, cwd=tmp_path)


@pytest.mark.slow
def test_lenet_sess_run_with_flags_configproto_iteration_loop_and_loss_scaling(tmp_path):
    done = _run("lenet_sess_run.py", "--loops", "20", tmp_path=tmp_path)
    losses = _losses_fall(done, "lenet_sess_run.py")
    steps = [int(s) for s in re.findall(r"global_step (\d+)", done.stdout)]
    assert len(losses) == 20 and steps == list(range(5, 105, 5)), steps  # 5 training steps per sess.run


@pytest.mark.slow
def test_mlp_with_npu_tf_optimizer(tmp_path):
    done = _run("mlp_npu_tf_optimizer.py", tmp_path=tmp_path)
    _losses_fall(done, "mlp_npu_tf_optimizer.py")
    assert float(re.search(r"accuracy ([0-9.]+)", done.stdout).group(1)) > 0.9


@pytest.mark.slow
def test_bert_style_classifier_with_dropout_gelu_and_contrib_layer_norm(tmp_path):
    done = _run("bert_classifier_estimator.py", "--output_dir", tmp_path / "out", tmp_path=tmp_path)
    _losses_fall(done, "bert_classifier_estimator.py")
    assert float(re.search(r"eval_accuracy ([0-9.]+)", done.stdout).group(1)) > 0.9


@pytest.mark.slow
def test_slim_cnn_estimator_evaluates_the_ema_weights(tmp_path):
    done = _run("slim_cnn_estimator.py", "--model_dir", tmp_path / "model", tmp_path=tmp_path)
    _losses_fall(done, "slim_cnn_estimator.py")
    assert float(re.search(r"eval_accuracy ([0-9.]+)", done.stdout).group(1)) > 0.9


@pytest.mark.slow
def test_compat_v1_autoencoder_frozen_with_convert_variables_to_constants(tmp_path):
    done = _run("autoencoder_freeze_compat_v1.py", tmp_path, tmp_path=tmp_path)
    _losses_fall(done, "autoencoder_freeze_compat_v1.py")
    assert "frozen_matches True variables_left 0" in done.stdout
    assert (tmp_path / "frozen_autoencoder.pb").stat().st_size > 0


def _write_mnist(directory, train=1100, test=200):
    """MNIST-format files whose classes are fixed random patterns plus noise (learnable in 100 steps)."""
    rng = np.random.RandomState(0)
    patterns = np.random.RandomState(3).randint(0, 256, (10, 28, 28))
    for prefix, n in (("train", train), ("t10k", test)):
        labels = rng.randint(0, 10, n)
        images = np.clip(patterns[labels] * 0.7 + rng.randint(0, 80, (n, 28, 28)), 0, 255)
        write_idx(directory / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(directory / f"{prefix}-labels-idx1-ubyte.gz", labels)


@pytest.mark.slow
def test_mnist_tutorial_reads_the_idx_files_with_input_data(tmp_path):
    data = tmp_path / "mnist"
    data.mkdir()
    _write_mnist(data)
    done = _run("mnist_input_data.py", "--data_dir", data, tmp_path=tmp_path)
    _losses_fall(done, "mnist_input_data.py")
    assert float(re.search(r"test_accuracy ([0-9.]+)", done.stdout).group(1)) > 0.9


@pytest.mark.slow
def test_lstm_with_contrib_rnn_hparams_and_map_and_batch(tmp_path):
    done = _run("lstm_contrib_hparams.py", "--hparams", "learning_rate=0.01,max_steps=120", tmp_path=tmp_path)
    _losses_fall(done, "lstm_contrib_hparams.py")
    assert "'learning_rate': 0.01, 'max_steps': 120" in done.stdout
    assert re.search(r"step 11\d step_loss", done.stdout)


@pytest.mark.slow
def test_data_parallel_npu_distributed_optimizer_under_launch(tmp_path):
    done = subprocess.run([sys.executable, "-m", "npurun.distribute.launch", "-n", "2",
                           str(CORPUS / "data_parallel_estimator.py"), "--model_dir", str(tmp_path / "model")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    output = done.stdout + done.stderr
    for rank in (0, 1):
        lines = "\n".join(line for line in output.splitlines() if line.startswith(f"[rank {rank}]"))
        losses = [float(next(v for v in groups if v)) for groups in LOSS.findall(lines)]
        assert len(losses) >= 8 and np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3]), (rank, losses)
    checksums = re.findall(r"rank \d weights_checksum (\S+)", output)
    assert len(checksums) == 2 and checksums[0] == checksums[1], checksums
