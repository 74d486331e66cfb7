"""NPURUN_FORCE_LOW_PRECISION is honoured alike by NPUEstimator, sess.run mode and `npurun run`.

Each path runs a graph under precision_mode='allow_mix_precision' on a CPU without fp16 hardware:
by default its MatMuls execute in float32 (with one warning); forced, in float16.
"""
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import tensorflow as tf

from npurun import NPURunConfig
from npurun.estimator import EstimatorSpec, NPUEstimator
from npurun.precision import policy

v1 = tf.compat.v1
SCRIPT = pathlib.Path(__file__).parent / "scripts" / "mixed_precision_sess_run.py"
MODE = "allow_mix_precision"


def matmul_dtypes(partition_graphs) -> set:
    return {tf.as_dtype(node.attr["T"].type).name for graph in partition_graphs for node in graph.node
            if "MatMul" in node.op and "T" in node.attr}


def fallback_warnings(caught) -> list:
    return [w for w in caught if issubclass(w.category, policy.LowPrecisionFallbackWarning)]


@pytest.fixture(params=["default", "forced"])
def switch(request, cpu_features, monkeypatch):
    """A CPU without fp16 hardware, with NPURUN_FORCE_LOW_PRECISION unset or 1; the expected MatMul dtype."""
    if request.param == "forced":
        monkeypatch.setenv(policy.FORCE_ENV, "1")
        return "float16"
    return "float32"


class PartitionGraphsHook(v1.train.SessionRunHook):
    def __init__(self):
        self.dtypes = set()

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(None, options=v1.RunOptions(output_partition_graphs=True))

    def after_run(self, run_context, run_values):
        self.dtypes |= matmul_dtypes(run_values.run_metadata.partition_graphs)


def _model_fn(features, labels, mode, params):
    hidden = tf.nn.relu(tf.matmul(features, v1.get_variable("w1", [8, 16])))
    logits = tf.matmul(hidden, v1.get_variable("w2", [16, 3]))
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
    rng = np.random.RandomState(0)
    x, y = rng.normal(size=(64, 8)).astype(np.float32), rng.randint(0, 3, size=64).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(16, drop_remainder=True)


def test_estimator(switch, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = NPURunConfig(precision_mode=MODE, model_dir=str(tmp_path), save_checkpoints_steps=100)
        hook = PartitionGraphsHook()
        NPUEstimator(_model_fn, config=config).train(_input_fn, steps=3, hooks=[hook])
    assert hook.dtypes == {switch}
    assert len(fallback_warnings(caught)) == (1 if switch == "float32" else 0)


def test_sess_run_mode(switch):
    import npurun.compat as compat

    config = v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["precision_mode"].s = MODE.encode()
    compat.activate()
    try:
        with tf.Graph().as_default(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            w = v1.get_variable("w", [32, 32])
            loss = tf.reduce_sum(tf.matmul(tf.random.normal([16, 32], seed=1), w))
            train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
            with v1.Session(config=config) as sess:
                sess.run(v1.global_variables_initializer())
                metadata = v1.RunMetadata()
                sess.run(train, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    finally:
        compat.deactivate()
    assert matmul_dtypes(metadata.partition_graphs) == {switch}
    assert len(fallback_warnings(caught)) == (1 if switch == "float32" else 0)


@pytest.mark.parametrize("forced", [False, True])
def test_npurun_run(forced, tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1", TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    env[policy.FORCE_ENV] = "1" if forced else "0"
    done = subprocess.run([sys.executable, "-m", "npurun.compat", "run", str(SCRIPT)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # fp16 on a CPU: no CPU measured within 1.2x of float32, so the default is float32 on any CPU.
    assert f"matmul_dtypes {'float16' if forced else 'float32'}\n" in done.stdout
    assert done.stderr.count(f"precision_mode='{MODE}' runs in float32") == (0 if forced else 1), done.stderr[-3000:]
