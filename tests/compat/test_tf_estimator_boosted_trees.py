"""Issue 25: `tf.estimator.BoostedTrees*`. They are refused, and these tests hold the facts the refusal rests on:
TensorFlow 2.21 has no kernels for the `tf.raw_ops.BoostedTrees*` ops it still defines, and TF 2.15 (the peer
the other premade estimators are compared with) has neither the kernels nor the estimators. If a TensorFlow
release brings the kernels back, `test_no_boosted_trees_kernels_here` fails: then the estimators can be built."""
import subprocess

import pytest
import tensorflow as tf
from tensorflow.python.framework import kernels

NAMES = ("BoostedTreesClassifier", "BoostedTreesRegressor", "BoostedTreesEstimator")


def _boosted_trees_ops():
    return sorted(name for name in dir(tf.raw_ops) if "BoostedTrees" in name)


def test_no_boosted_trees_kernels_here():
    ops = _boosted_trees_ops()
    assert len(ops) >= 20 and "BoostedTreesPredict" in ops and "BoostedTreesUpdateEnsembleV2" in ops
    assert {name: len(kernels.get_registered_kernels_for_op(name).kernel) for name in ops} == dict.fromkeys(ops, 0)
    graph = tf.Graph()
    with graph.as_default():
        handle = tf.raw_ops.BoostedTreesEnsembleResourceHandleOp(shared_name="trees")
        with tf.compat.v1.Session(graph=graph) as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                                     match="No OpKernel was registered"):
            sess.run(handle)


@pytest.mark.parametrize("name", NAMES)
def test_refused_with_the_reason(active, name):
    """Made as a TF <= 2.8 script makes them: one AdapterAPIError (an ImportError and a NotImplementedError)
    that names the estimator and says why, before any graph is built."""
    from npurun.tf_estimator import canned

    args = {"feature_columns": [tf.feature_column.numeric_column("x")], "n_batches_per_layer": 1}
    if name == "BoostedTreesEstimator":
        args["head"] = tf.estimator.BinaryClassHead()
    for make in (getattr(tf.estimator, name), getattr(tf.compat.v1.estimator, name), getattr(canned, name)):
        with pytest.raises(active.AdapterAPIError) as raised:
            make(**args)
        message = str(raised.value)
        assert name in message
        assert "registers the tf.raw_ops.BoostedTrees* ops but no kernels for them" in message
        assert "tf.estimator 2.8 the last with these estimators" in message
        assert isinstance(raised.value, ImportError) and isinstance(raised.value, NotImplementedError)


@pytest.mark.slow  # one short TF 2.15 subprocess (importing TensorFlow: a few seconds of CPU)
def test_tf215_has_neither_the_estimators_nor_the_kernels(tf215_python, tmp_path):
    probe = ("import tensorflow as tf\n"
             "from tensorflow.python.framework import kernels\n"
             f"print(sorted(n for n in {NAMES!r} if hasattr(tf.estimator, n)))\n"
             "ops = [n for n in dir(tf.raw_ops) if 'BoostedTrees' in n]\n"
             "print(len(ops), sum(len(kernels.get_registered_kernels_for_op(n).kernel) for n in ops))\n")
    done = subprocess.run([str(tf215_python), "-c", probe], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    estimators, counts = done.stdout.strip().splitlines()[-2:]
    assert estimators == "[]"
    n_ops, n_kernels = map(int, counts.split())
    assert n_ops >= 20 and n_kernels == 0
