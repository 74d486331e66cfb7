"""The TensorFlow 1 world of `npurun run`: scripts get tf.compat.v1 + tf.contrib in graph mode, npurun keeps TF 2."""
import textwrap

import numpy as np
import pytest

from npurun.tf1 import contrib, hparams, mnist_input_data
from npurun.tf1 import world as tf1
from npurun.adapter.tables import Mapped

from .conftest import run_compat

TF1_SCRIPT = """\
import sys


def real_v1():
    return sys.modules["tensorflow"].compat.v1


import tensorflow as tf
import tensorflow.compat.v1 as v1
from tensorflow.contrib import slim
import tensorflow.contrib.slim as slim_too
from tensorflow.contrib.layers.python.layers import utils as layer_utils
from tensorflow.python.framework.graph_util import convert_variables_to_constants
import npurun.runtime.plan as plan
import tf_slim
from tensorflow.train import AdamOptimizer
from tensorflow.summary import FileWriter
from tensorflow.contrib.slim.python.slim.nets import resnet_v1
from tensorflow.contrib.tpu.python.tpu.tpu_config import TPUConfig
from tensorflow.contrib.framework.python.ops import arg_scope, add_arg_scope, variables as contrib_variables
print("framework_ops", arg_scope is tf_slim.arg_scope, add_arg_scope is tf_slim.add_arg_scope,
      contrib_variables is sys.modules["tf_slim.ops.variables"])
from tensorflow_core.python.framework import graph_util as core_graph_util
print("tf1_paths", AdamOptimizer is real_v1().train.AdamOptimizer, FileWriter is real_v1().summary.FileWriter,
      resnet_v1 is sys.modules["tf_slim.nets.resnet_v1"], TPUConfig.__module__,
      core_graph_util is sys.modules["tensorflow.python.framework.graph_util"])

tf.flags.DEFINE_integer("steps", 1, "training steps")
FLAGS = tf.flags.FLAGS


def main(_):
    real = sys.modules["tensorflow"]
    print("script_tf", tf is not real, "v1", v1 is real.compat.v1, "npurun_tf", plan.tf is real,
          "slim", slim is slim_too and slim.arg_scope is tf_slim.arg_scope and slim.conv2d is tf_slim.conv2d,
          "utils", layer_utils is sys.modules["tf_slim.layers.utils"])
    tf.set_random_seed(2)  # deterministic: from some initialisations 5 steps at 0.1 do not lower this loss
    x = tf.placeholder(tf.float32, [None, 3])
    print("graph_mode", not tf.executing_eagerly(), "tf1_shape", x.shape[1].value)
    net = tf.contrib.layers.fully_connected(x, 4, weights_initializer=tf.contrib.layers.xavier_initializer())
    net = tf.contrib.layers.layer_norm(net)
    net = tf.layers.dense(net, 1, name="out")
    loss = tf.losses.mean_squared_error(tf.ones_like(net), net)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    iterator = tf.data.Dataset.from_tensor_slices(np.ones((4, 3), np.float32)).repeat().batch(2)
    iterator = iterator.make_initializable_iterator()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), iterator.initializer])
        losses = [sess.run([loss, train], {x: sess.run(iterator.get_next())})[0] for _ in range(FLAGS.steps)]
        frozen = convert_variables_to_constants(sess, sess.graph_def, ["out/BiasAdd"])
    print("losses_fall", losses[-1] < losses[0], "frozen_variables",
          sum(node.op in ("VariableV2", "VarHandleOp") for node in frozen.node))
    for use in (lambda: tf.contrib.tpu.CrossShardOptimizer(None), lambda: tf.contrib.layers.embed_sequence(x)):
        try:
            use()
        except Exception as error:
            print(type(error).__name__, str(error).split(":")[0])
    import tensorflow.contrib.seq2seq as seq2seq  # importing works, as on TF 1; using it raises
    try:
        seq2seq.dynamic_decode()
    except Exception as error:
        print("use", type(error).__name__, str(error).split(":")[0])
    try:
        from tensorflow.contrib.seq2seq.python.ops import decoder
    except ImportError as error:
        print("import", type(error).__name__, str(error).split(":")[0])
    print("keras", tf.keras.__name__, "estimator", tf.estimator.Estimator.__name__)


import numpy as np

if __name__ == "__main__":
    tf.app.run()
"""


def test_script_gets_tensorflow_1_and_npurun_keeps_tensorflow_2(tmp_path):
    (tmp_path / "train.py").write_text(TF1_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", "--steps", "5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "script_tf True v1 True npurun_tf True slim True utils True" in out
    assert "tf1_paths True True True npurun.tf1.contrib.tpu True" in out
    assert "framework_ops True True True" in out
    assert "graph_mode True tf1_shape 3" in out
    assert "losses_fall True frozen_variables 0" in out
    assert "AdapterAPIError tf.contrib.tpu.CrossShardOptimizer is not supported by npurun" in out
    assert "AdapterAPIError tf.contrib.layers.embed_sequence is not supported by npurun" in out
    assert "use AdapterAPIError tf.contrib.seq2seq.dynamic_decode is not supported by npurun" in out
    assert "import AdapterAPIError tf.contrib.seq2seq.python is not supported by npurun" in out
    assert "keras tf_keras.api._v1.keras estimator Estimator" in out


def test_every_mapped_contrib_name_resolves_in_the_tf1_world(tmp_path):
    names = [f"{module}.{name}" for module, table in contrib.MODULES.items()
             for name, entry in table.items() if isinstance(entry, Mapped)]
    (tmp_path / "names.py").write_text(textwrap.dedent(f"""\
        import tensorflow as tf
        missing = []
        for name in {names!r}:
            value = tf.contrib
            try:
                for attribute in name.split("."):  # (`losses.metric_learning.triplet_semihard_loss`: 3 parts)
                    value = getattr(value, attribute)
            except Exception as error:
                missing.append((name, repr(error)))
        print("missing", missing)
        """))
    done = run_compat("run", tmp_path / "names.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "missing []" in done.stdout, done.stdout
    assert len(names) > 150


@pytest.mark.parametrize("globals_, expected", [
    ({"__name__": "__main__", "__file__": "/home/user/model/train.py"}, True),
    ({"__name__": "model", "__file__": "/home/user/model/model.py"}, True),
    ({"__name__": "__main__"}, True),
    ({"__name__": "npurun.runtime.plan", "__file__": tf1.__file__}, False),
    ({"__name__": "tf_slim.layers", "__file__": "/x/lib/python3.11/site-packages/tf_slim/layers.py"}, False),
    ({"__name__": "json", "__file__": np.__file__.split("site-packages")[0] + "json/__init__.py"}, False),
    (None, False),
])
def test_who_gets_tensorflow_1(globals_, expected):
    assert tf1.is_script(globals_) is expected


def test_hparams_parse_types_and_errors():
    hp = hparams.HParams(learning_rate=0.1, layers=[32, 16], use_bn=True, name="m", steps=10)
    hp.parse("learning_rate=1,layers=[8,4,2],use_bn=false,steps=20")
    assert hp.values() == {"learning_rate": 1.0, "layers": [8, 4, 2], "use_bn": False, "name": "m", "steps": 20}
    assert isinstance(hp.learning_rate, float)
    with pytest.raises(ValueError, match="Unknown hyperparameter"):
        hp.parse("dropout=0.5")
    with pytest.raises(ValueError, match="steps"):
        hp.parse("steps=0.5")
    hp.add_hparam("dropout", 0.5)
    assert hp.get("dropout") == 0.5 and "dropout" in hp
    copy = hparams.HParams(**{name: value for name, value in hp.values().items()})
    assert copy.parse_json(hp.to_json()).values() == hp.values()


def _write_mnist(directory, n_train=30, n_test=10, gz=True):
    rng = np.random.RandomState(0)
    suffix = ".gz" if gz else ""
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        mnist_input_data.write_idx(directory / f"{prefix}-images-idx3-ubyte{suffix}",
                                   rng.randint(0, 256, (n, 28, 28)))
        mnist_input_data.write_idx(directory / f"{prefix}-labels-idx1-ubyte{suffix}", np.arange(n) % 10)


@pytest.mark.parametrize("gz", [True, False])
def test_read_data_sets_reads_idx_files(tmp_path, gz):
    _write_mnist(tmp_path, gz=gz)
    data = mnist_input_data.read_data_sets(str(tmp_path), one_hot=True, validation_size=10, seed=1)
    assert (data.train.num_examples, data.validation.num_examples, data.test.num_examples) == (20, 10, 10)
    assert data.train.images.shape == (20, 784) and data.train.images.dtype == np.float32
    assert 0.0 <= data.train.images.min() and data.train.images.max() <= 1.0
    np.testing.assert_array_equal(data.test.labels.argmax(axis=1), np.arange(10))
    seen = np.concatenate([data.train.next_batch(8)[1].argmax(axis=1) for _ in range(6)])  # the 6th starts epoch 3
    assert data.train.epochs_completed == 2
    assert sorted(seen[:20].tolist()) == sorted((np.arange(10, 30) % 10).tolist())


def test_read_data_sets_without_reshape_gives_nhwc_images_as_tf1_did(tmp_path):
    # ModelZoo DCGAN / Gitloss style: read_data_sets(path, reshape=[]) then feed a [None, 28, 28, 1] placeholder
    _write_mnist(tmp_path)
    for flat in (False, []):
        data = mnist_input_data.read_data_sets(str(tmp_path), one_hot=True, reshape=flat, validation_size=10)
        assert data.train.images.shape == (20, 28, 28, 1) and data.test.images.shape == (10, 28, 28, 1)
        assert data.train.next_batch(4)[0].shape == (4, 28, 28, 1)
    flattened = mnist_input_data.read_data_sets(str(tmp_path), validation_size=10).train.images
    assert flattened.shape == (20, 784)


def test_read_data_sets_names_missing_files(tmp_path):
    _write_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"t10k-labels-idx1-ubyte\[\.gz\].*does not download"):
        mnist_input_data.read_data_sets(str(tmp_path))


TPU_SCRIPT = """\
import numpy as np
import tensorflow as tf
flags = tf.flags
flags.DEFINE_bool("use_tpu", False, "")
flags.DEFINE_string("output_dir", None, "")
FLAGS = flags.FLAGS
def model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features["x"], 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op, scaffold_fn=None)
    def metric_fn(labels, logits):
        return {"accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, -1))}
    return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
def input_fn_builder(training):
    def input_fn(params):
        rng = np.random.RandomState(0)
        x = rng.normal(size=(512, 4)).astype(np.float32); y = (x[:, 0] > 0).astype(np.int32)
        d = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
        if training: d = d.repeat().shuffle(100)
        print("batch_size", params["batch_size"])
        return d.batch(params["batch_size"], drop_remainder=True)
    return input_fn
def main(_):
    tpu_cluster_resolver = None
    is_per_host = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2
    run_config = tf.contrib.tpu.RunConfig(cluster=tpu_cluster_resolver, master=None, model_dir=FLAGS.output_dir,
        save_checkpoints_steps=100, tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=10, num_shards=8,
        per_host_input_for_training=is_per_host))
    estimator = tf.contrib.tpu.TPUEstimator(use_tpu=FLAGS.use_tpu, model_fn=model_fn, config=run_config,
        train_batch_size=32, eval_batch_size=16, predict_batch_size=8)
    estimator.train(input_fn=input_fn_builder(True), max_steps=50)
    print("eval_accuracy", estimator.evaluate(input_fn=input_fn_builder(False), steps=4)["accuracy"])
    try:
        tf.contrib.tpu.TPUEstimator(use_tpu=True, model_fn=model_fn, config=run_config, train_batch_size=32)
    except Exception as error:
        print(type(error).__name__, str(error).split(":")[0])
if __name__ == "__main__":
    tf.app.run()
"""


def test_tpu_estimator_with_use_tpu_false_runs_as_an_estimator(tmp_path):
    """BERT-style TPU reference code: params["batch_size"] per mode, TPUEstimatorSpec eval_metrics=(fn, tensors)."""
    (tmp_path / "tpu.py").write_text(TPU_SCRIPT)
    done = run_compat("run", tmp_path / "tpu.py", "--output_dir", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batch_size 32\nbatch_size 16\n" in done.stdout
    assert float(done.stdout.split("eval_accuracy ")[1].split()[0]) > 0.9
    assert "AdapterAPIError tf.contrib.tpu.TPUEstimator(use_tpu=True) is not supported by npurun" in done.stdout


def test_lazy_adam_updates_only_the_rows_a_sparse_gradient_touches():
    import tensorflow as tf

    from npurun.tf1.contrib.opt import LazyAdamOptimizer

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        table = v1.get_variable("table", initializer=np.arange(8, dtype=np.float32).reshape(4, 2))
        dense = v1.get_variable("dense", initializer=np.arange(8, dtype=np.float32).reshape(4, 2))
        rows = v1.placeholder(tf.int32, [None])
        loss = tf.reduce_sum(tf.square(tf.gather(table, rows)))
        lazy = LazyAdamOptimizer(0.1).minimize(loss, var_list=[table])
        reference = v1.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(tf.square(dense[:2])), var_list=[dense])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run([lazy, reference], {rows: [0, 1]})
            first, expected = sess.run([table, dense])
            np.testing.assert_allclose(first[:2], expected[:2], rtol=1e-6)  # same step as Adam on the touched rows
            np.testing.assert_array_equal(first[2:], np.arange(4, 8, dtype=np.float32).reshape(2, 2))
            sess.run(lazy, {rows: [2, 2]})  # duplicate indices: gradients summed
            second = sess.run(table)
    np.testing.assert_array_equal(second[:2], first[:2])  # not in the batch: no momentum step (Adam would move them)
    assert (second[2] < first[2]).all() and (second[3] == first[3]).all()


def test_contrib_image_rotate_translate_match_numpy():
    import tensorflow as tf

    from npurun.tf1.contrib import image as contrib_image

    image = np.arange(1, 26, dtype=np.float32).reshape(5, 5, 1)
    batch = np.stack([image, image * 2])
    rotated = contrib_image.rotate(batch, [np.pi / 2, np.pi])
    shifted = contrib_image.translate(image, [1, 2])
    np.testing.assert_allclose(rotated[0, :, :, 0], np.rot90(image[:, :, 0]), atol=1e-4)  # counterclockwise
    np.testing.assert_allclose(rotated[1, :, :, 0], np.rot90(2 * image[:, :, 0], 2), atol=1e-4)
    expected = np.zeros((5, 5), np.float32)
    expected[2:, 1:] = image[:3, :4, 0]
    np.testing.assert_allclose(shifted[:, :, 0], expected)
    both = contrib_image.compose_transforms(contrib_image.translations_to_projective_transforms([1, 0]),
                                            contrib_image.translations_to_projective_transforms([0, 2]))
    np.testing.assert_allclose(contrib_image.transform(image, both), shifted)
    assert isinstance(rotated, tf.Tensor)


@pytest.mark.parametrize("source, expected", [
    ("from npu_bridge.npu_init import *\nimport tensorflow as tf\n", True),
    ("import os\n  from hccl.manage.api import get_rank_id\n", True),
    ("import tensorflow as tf\n# from npu_bridge.npu_init import *\n", False),
    ("from npurun import NPURunConfig\nimport npu_bridge_like\n", False),
])
def test_launch_runs_adapter_scripts_as_npurun_run(tmp_path, source, expected):
    from npurun.distribute.launch import uses_adapter

    (tmp_path / "train.py").write_text(source)
    assert uses_adapter(str(tmp_path / "train.py")) is expected
