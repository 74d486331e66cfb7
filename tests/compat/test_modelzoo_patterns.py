"""Small patterns found by running real ModelZoo-TensorFlow scripts unmodified under `npurun run`
(docs/compat.md, "Real ModelZoo scripts"); each failed before its fix."""

import numpy as np
import pytest
import tensorflow as tf

from npurun import NPUEstimator, NPURunConfig
from npurun.estimator import EstimatorSpec

v1 = tf.compat.v1


class _LossByNameHook(v1.train.SessionRunHook):
    """ALBERT-lcqmc's run_classifier logs the loss with a hook fetching it by name."""

    def __init__(self, name):
        self.name, self.seen = name, []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(fetches=[v1.train.get_global_step(), self.name])

    def after_run(self, run_context, run_values):
        self.seen.append(tuple(run_values.results))


def _classifier_model_fn(features, labels, mode):
    weights = v1.get_variable("output_weights", [2, 3], initializer=v1.truncated_normal_initializer(stddev=0.02))
    logits = tf.matmul(features["x"], weights, transpose_b=True)
    with v1.variable_scope("loss"):
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        per_example_loss = -tf.reduce_sum(tf.one_hot(labels, 2) * log_probs, axis=-1)
        loss = tf.reduce_mean(per_example_loss, name="total_loss")
        tf.identity(per_example_loss, name="per_example")
    train_op = v1.train.AdamOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8, drop_remainder=True)


def _estimator(tmp_path):
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=4, save_checkpoints_steps=100,
                          log_step_count_steps=None)
    return NPUEstimator(_classifier_model_fn, config=config)


def test_a_hook_fetching_the_loss_by_name_gets_the_loss_in_a_device_loop(tmp_path, control_flow):
    hook = _LossByNameHook("loss/total_loss:0")
    _estimator(tmp_path).train(_input_fn, max_steps=40, hooks=[hook])
    steps = [step for step, _ in hook.seen]
    losses = [loss for _, loss in hook.seen]
    assert len(hook.seen) == 10 and steps == sorted(steps)  # one run per loop of 4 steps
    assert losses[-1] < 0.5 * losses[0]


def test_a_hook_fetching_another_loop_tensor_by_name_is_a_clear_error(tmp_path, control_flow):
    with pytest.raises(ValueError, match="_LossByNameHook fetches (npurun_device_loop/)?loss/per_example.*inside the device loop"):
        _estimator(tmp_path).train(_input_fn, max_steps=8, hooks=[_LossByNameHook("loss/per_example:0")])


def _official_model_fn(features, labels, mode):
    """As official-models ResNet's resnet_model_fn: tensors named for the LoggingTensorHook the script adds."""
    weights = v1.get_variable("w", [3, 2], initializer=v1.zeros_initializer())
    logits = tf.matmul(features["x"], weights)
    cross_entropy = v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    tf.identity(cross_entropy, name="cross_entropy")
    learning_rate = v1.train.exponential_decay(0.5, v1.train.get_global_step(), 10, 0.5)
    tf.identity(learning_rate, name="learning_rate")
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), labels), tf.float32))
    tf.identity(accuracy, name="train_accuracy")
    train_op = v1.train.GradientDescentOptimizer(learning_rate).minimize(
        cross_entropy, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=cross_entropy, train_op=train_op)


class _Recorder(v1.train.LoggingTensorHook):
    """LoggingTensorHook that also keeps what it logged."""

    def __init__(self, tensors, every_n_iter):
        super().__init__(tensors=tensors, every_n_iter=every_n_iter)
        self.logged = []

    def _log_tensors(self, tensor_values):
        self.logged.append(dict(tensor_values))


@pytest.fixture(params=["control flow v2", "control flow v1"])
def control_flow(request):
    """TF 1 scripts run with v1 control flow (npurun run switches TF 1 behaviour on): the loop body's ops are
    then in the graph itself, under the loop's name scope."""
    from tensorflow.python.ops import control_flow_util

    saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = request.param == "control flow v2"
    yield request.param
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved


def test_a_logging_tensor_hook_naming_model_fn_tensors_logs_their_last_loop_values(tmp_path, control_flow):
    hook = _Recorder(tensors={name: name for name in ("learning_rate", "cross_entropy", "train_accuracy")},
                     every_n_iter=1)
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=10, save_checkpoints_steps=100,
                          log_step_count_steps=None)
    NPUEstimator(_official_model_fn, config=config).train(_input_fn, max_steps=30, hooks=[hook])
    assert len(hook.logged) == 3  # one run per loop of 10 steps
    # the learning rate of each loop's last step (steps 9, 19, 29: the value before the step's update)
    np.testing.assert_allclose([v["learning_rate"] for v in hook.logged], [0.5 * 0.5 ** (s / 10) for s in (9, 19, 29)],
                               rtol=1e-5)
    # zero weights start at ln 2; each logged loss is a trained step's
    assert all(v["cross_entropy"] < 0.5 * np.log(2) for v in hook.logged)
    assert hook.logged[-1]["train_accuracy"] > 0.8


CONTRIB_LEARN_SCRIPT = '''\
from npu_bridge.npu_init import *
import re
import numpy as np
import tensorflow as tf
from tensorflow.contrib import learn
from tensorflow.contrib.learn.python.learn.datasets import mnist


def tokenizer_char(iterator):
    for value in iterator:
        yield list(value)


class MyVocabularyProcessor(learn.preprocessing.VocabularyProcessor):  # as Siamese's preprocess.py
    def __init__(self, max_document_length, min_frequency=0, vocabulary=None):
        super(MyVocabularyProcessor, self).__init__(max_document_length, min_frequency, vocabulary, tokenizer_char)


vocab = MyVocabularyProcessor(4, min_frequency=1)
ids = np.array(list(vocab.fit_transform(["abca", "abd", "b"])))
print("ids", ids.tolist(), "size", len(vocab.vocabulary_))
vocab.save("vocab.pkl")
print("restored", list(learn.preprocessing.VocabularyProcessor.restore("vocab.pkl").transform(["ba"]))[0].tolist())
words = tf.contrib.learn.preprocessing.VocabularyProcessor(3)
print("words", list(words.fit_transform(["Hello world", "world peace"]))[1].tolist(), list(words.reverse([[2, 3]])))
mode = tf.contrib.learn.ModeKeys.INFER
print("modes", tf.contrib.learn.ModeKeys.TRAIN, tf.contrib.learn.ModeKeys.EVAL, mode)
print("static", tf.contrib.util.constant_value(tf.constant([3, 4])).tolist())
table = tf.contrib.lookup.HashTable(tf.contrib.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2]), -1)
index = tf.contrib.lookup.index_table_from_tensor(tf.constant(["x", "y"]), default_value=-1)
with tf.Session() as sess:
    sess.run(tf.tables_initializer())
    print("lookup", sess.run(table.lookup(tf.constant(["b", "z"]))).tolist(),
          sess.run(index.lookup(tf.constant(["y", "q"]))).tolist())
print("mnist", mnist.read_data_sets.__module__)
'''


def test_contrib_learn_util_and_lookup_pieces_scripts_use(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(CONTRIB_LEARN_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    # min_frequency=1 keeps characters seen twice or more (a: 3, b: 3), numbered by frequency, ties sorted
    assert "ids [[1, 2, 0, 1], [1, 2, 0, 0], [2, 0, 0, 0]] size 3" in out
    assert "restored [2, 1, 0, 0]" in out
    assert "words [2, 3, 0] ['world peace']" in out
    assert "modes train eval infer" in out
    assert "static [3, 4]" in out
    assert "lookup [2, -1] [1, -1]" in out
    assert "mnist npurun.tf1.mnist_input_data" in out


CHECK_BRANCHES = '''\
from npu_bridge.npu_init import *
import tensorflow as tf
from tensorflow.contrib import cluster_resolver as contrib_cluster_resolver

flags = tf.flags
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
FLAGS = flags.FLAGS


def deconv2d(input_, w, output_shape):
    try:
        deconv = tf.nn.conv2d_transpose(input_, w, output_shape=output_shape, strides=[1, 2, 2, 1])
    # Support for verisons of TensorFlow before 0.7.0
    except AttributeError:
        deconv = tf.nn.deconv2d(input_, w, output_shape=output_shape, strides=[1, 2, 2, 1])
    return deconv


def main(_):
    tpu_cluster_resolver = None
    if FLAGS.use_tpu and FLAGS.tpu_name:
        tpu_cluster_resolver = tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu_name)
    optimizer = tf.train.AdamOptimizer(0.1)
    if FLAGS.use_tpu:
        optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
    return tpu_cluster_resolver, optimizer
'''


def test_check_does_not_count_tpu_branches_and_except_fallbacks_as_raising():
    from npurun.tools.check import check_source

    found = {f.name: f for f in check_source(CHECK_BRANCHES, "run_classifier.py")}
    assert [f.name for f in found.values() if f.error] == []
    assert "fallback" in found["tensorflow.nn.deconv2d"].status
    assert "TPU-only" in found["tensorflow.contrib.cluster_resolver.TPUClusterResolver"].status
    assert "TPU-only" in found["tensorflow.contrib.tpu.CrossShardOptimizer"].status
    assert "importing it works" in found["tensorflow.contrib.cluster_resolver"].detail
    # the same names outside such branches do raise, and check says so
    unguarded = CHECK_BRANCHES + "\nopt = tf.contrib.tpu.CrossShardOptimizer(None)\nx = tf.nn.deconv2d\n"
    raising = sorted(f.name for f in check_source(unguarded, "run_classifier.py") if f.error)
    assert raising == ["tensorflow.contrib.tpu.CrossShardOptimizer", "tensorflow.nn.deconv2d"]


def test_numpy_aliases_and_tf1_array_ops_paths_of_tensorflow_1_times_exist_for_scripts(tmp_path):
    from .conftest import run_compat

    # Pix2Pix's utils.py: imageio.imread(path).astype(np.float); many data loaders: dtype=np.int / np.bool
    (tmp_path / "train.py").write_text(
        "from npu_bridge.npu_init import *\nimport numpy as np\nimport tensorflow as tf\n"
        "a = np.zeros(2).astype(np.float)\nb = np.array([1.7], dtype=np.int)\nc = np.ones(1, dtype=np.bool)\n"
        "print('aliases', a.dtype, b.dtype, c.dtype, np.float is float, np.object is object)\n"
        # TabNet's sparsemax reaches into tensorflow.python as TF 1 code did
        "from tensorflow.python.ops import array_ops\n"
        "pair = array_ops.stack([tf.constant(1), tf.constant(2)], axis=0)\n"
        "with tf.Session() as sess:\n    print('stack', sess.run(pair).tolist(), len(array_ops.unstack(pair)))\n"
        # official-models utils/flags/_performance.py: a str where a tuple was meant, as absl-py 0.x took it
        "from absl import flags\n"
        "flags.DEFINE_enum(name='fp16_implementation', default='keras', enum_values=(\"keras', 'graph_rewrite\"), "
        "help='')\nflags.FLAGS(['train.py', '--fp16_implementation=graph_rewrite'])\n"
        "print('enum', flags.FLAGS.fp16_implementation)\n"
        "import time\nstart = time.clock()\nsum(range(10 ** 6))\nprint('clock', time.clock() > start)\n")
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "aliases float64 int64 bool True True" in done.stdout
    assert "stack [1, 2] 2" in done.stdout
    assert "enum graph_rewrite" in done.stdout
    assert "clock True" in done.stdout  # GRU4Rec times its steps with time.clock()


class _LogSessionRunHook(v1.train.SessionRunHook):
    """AlexNet's (DeepLearningExamples-style) logger: fetches model_fn's named scalars by name each run."""

    def __init__(self):
        self.seen = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(fetches=[v1.train.get_global_step(), "loss:0", "total_loss:0",
                                                "learning_rate:0"])

    def after_run(self, run_context, run_values):
        self.seen.append(run_values.results)


def _alexnet_style_model_fn(features, labels, mode):
    weights = v1.get_variable("w", [3, 2], initializer=v1.zeros_initializer())
    logits = tf.matmul(features["x"], weights)
    loss = v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    base_loss = tf.identity(loss, name="loss")  # For access by logger
    total_loss = tf.identity(base_loss + 1e-4 * tf.nn.l2_loss(weights), name="total_loss")
    learning_rate = tf.identity(v1.train.exponential_decay(0.5, v1.train.get_global_step(), 10, 0.5),
                                name="learning_rate")
    train_op = v1.train.GradientDescentOptimizer(learning_rate).minimize(
        total_loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=total_loss, train_op=train_op)


def test_a_before_run_fetching_model_fn_named_scalars_gets_their_last_loop_values(tmp_path, control_flow):
    hook = _LogSessionRunHook()
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=10, save_checkpoints_steps=100,
                          log_step_count_steps=None)
    NPUEstimator(_alexnet_style_model_fn, config=config).train(_input_fn, max_steps=30, hooks=[hook])
    assert len(hook.seen) == 3
    np.testing.assert_allclose([lr for _, _, _, lr in hook.seen], [0.5 * 0.5 ** (s / 10) for s in (9, 19, 29)],
                               rtol=1e-5)
    assert all(total > loss and total - loss < 1e-2 for _, loss, total, _ in hook.seen)
    assert all(loss < 0.5 * np.log(2) for _, loss, _, _ in hook.seen)  # trained steps' losses (ln 2 at the start)


STANDALONE_KERAS_SCRIPT = '''\
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf
import keras
import keras.layers as layers
from keras.models import Model
from keras.layers import Input, Dense
from keras import backend as K

sess = tf.Session(config=npu_config_proto())
K.set_session(sess)  # FastText_ID0135 style: Keras 2 on the script's session
inputs = Input(shape=(4,))
outputs = layers.Dense(1, activation="sigmoid")(Dense(8, activation="relu")(inputs))
model = Model(inputs, outputs)
model.compile(loss="binary_crossentropy", optimizer=keras.optimizers.Adam(0.05), metrics=["accuracy"])
rng = np.random.RandomState(0)
x = rng.randn(256, 4).astype("float32")
y = (x[:, 0] > 0).astype("float32")
history = model.fit(x, y, batch_size=32, epochs=8, verbose=0)
print("keras", keras.__name__, K.get_session() is sess, tf.executing_eagerly())
print("loss", history.history["loss"][0] > 2 * history.history["loss"][-1])
try:
    import keras.engine.topology
except ModuleNotFoundError as error:
    print("missing", "tf-keras" in str(error))
'''


def test_a_tf1_scripts_standalone_keras_is_keras_2_on_its_session(tmp_path):
    from .conftest import run_compat

    (tmp_path / "train.py").write_text(STANDALONE_KERAS_SCRIPT)
    done = run_compat("run", tmp_path / "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "keras tf_keras.src True False" in done.stdout
    assert "loss True" in done.stdout
    assert "missing True" in done.stdout


def test_check_takes_a_relative_mixlist_next_to_the_script_as_valid(tmp_path, monkeypatch):
    from npurun.tools.check import check_file

    # GRU4Rec's main.py: its launch script cds into the script's folder, where ops_info.json is
    (tmp_path / "ops_info.json").write_text('{"black-list": {"to-add": ["Sqrt"]}}')
    (tmp_path / "main.py").write_text(
        "from npu_bridge.npu_init import *\nimport tensorflow as tf\nconfig = tf.ConfigProto()\n"
        "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()\ncustom_op.name = 'NpuOptimizer'\n"
        "custom_op.parameter_map['modify_mixlist'].s = './ops_info.json'\n"
        "custom_op.parameter_map['precision_mode'].s = 'allow_mix_precision'\n")
    monkeypatch.chdir(tmp_path.parent)  # checked from elsewhere
    found = [f for f in check_file(str(tmp_path / "main.py")) if f.name.startswith("modify_mixlist")]
    assert len(found) == 1 and not found[0].error and "next to the script" in found[0].detail
    (tmp_path / "ops_info.json").unlink()
    found = [f for f in check_file(str(tmp_path / "main.py")) if f.name.startswith("modify_mixlist")]
    assert found[0].error  # nowhere: invalid, as NPURunConfig would say
