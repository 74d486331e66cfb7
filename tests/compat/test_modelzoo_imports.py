"""Imports real ModelZoo scripts make at their top that npurun must let through (each counted over the
public Ascend/ModelZoo-TensorFlow sources): TPU-descended EfficientNet/MnasNet-style utilities, the
NPU dropout swap, contrib's YIQ colour distortion. The script below is written in their style."""
import textwrap

from npurun.tools.check import check_file

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from npu_bridge.npu_init import *
    from npu_bridge.estimator.npu import npu_convert_dropout
    from tensorflow.contrib.tpu.python.tpu import tpu_function
    from tensorflow.contrib.tpu.python.ops import tpu_ops
    from tensorflow.contrib.image.python.ops import distort_image_ops


    def cross_replica_mean(t):
        num_shards = tpu_function.get_tpu_context().number_of_shards
        if num_shards and num_shards > 1:
            return tpu_ops.cross_replica_sum(t) / num_shards
        return t


    def main(_):
        tf.set_random_seed(0)
        rng = np.random.RandomState(0)
        images = tf.constant(rng.rand(2, 4, 4, 3).astype(np.float32))
        x = tf.placeholder(tf.float32, [None, 3])
        w = tf.get_variable("w", [3, 1])
        loss = cross_replica_mean(tf.reduce_mean(tf.square(tf.nn.dropout(tf.matmul(x, w), keep_prob=0.9) - 3.0)))
        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        summary_ops = tf.contrib.summary.all_summary_ops()  # MnasNet style: none written, an empty list
        with tf.control_dependencies(update_ops + summary_ops):
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        print("summary_ops", summary_ops)
        same = distort_image_ops.adjust_hsv_in_yiq(images, 0.0, 1.0, 1.0)
        full_turn = distort_image_ops.adjust_hsv_in_yiq(images, 2 * np.pi, 1.0, 1.0)
        grey = distort_image_ops.adjust_hsv_in_yiq(images, 0.3, 0.0, 1.0)
        darker = distort_image_ops.adjust_hsv_in_yiq(images, 0.0, 1.0, 0.5)
        jittered = distort_image_ops.random_hsv_in_yiq(images, 0.2, 0.9, 1.1, 0.9, 1.1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: rng.rand(32, 3)}
            first = sess.run(loss, feed)
            for _ in range(30):
                sess.run(train, feed)
            last = sess.run(loss, feed)
            img, s, f, g, d, j = sess.run([images, same, full_turn, grey, darker, jittered])
        print("losses_fall", last < first)
        print("identity", np.allclose(s, img, atol=1e-5), np.allclose(f, img, atol=1e-4))
        print("grey", np.allclose(g, g[..., :1], atol=1e-5), "darker", np.allclose(d, img * 0.5, atol=1e-5),
              "jittered_changed", not np.allclose(j, img))
        try:
            tpu_ops.cross_replica_sum(loss)
        except Exception as error:
            print("tpu_ops", type(error).__name__)


    if __name__ == "__main__":
        tf.app.run()
    """)


def test_tpu_utilities_npu_dropout_swap_and_yiq_distortion_import_and_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "losses_fall True" in out
    assert "summary_ops []" in out
    assert "identity True True" in out
    assert "grey True darker True jittered_changed True" in out
    assert "tpu_ops AdapterAPIError" in out
    # check agrees: the only finding that raises is tpu_ops' use... which sits behind the multi-shard branch
    raising = {f.name for f in check_file(str(script)) if f.error}
    assert raising == {"tensorflow.contrib.tpu.python.ops.tpu_ops.cross_replica_sum"}, raising


THREADPOOL_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.data.experimental.ops import threadpool


    def input_fn(batch_size):
        ds = tf.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32)).batch(batch_size)
        return threadpool.override_threadpool(
            ds, threadpool.PrivateThreadPool(3, display_name="input_pipeline_thread_pool"))


    ds = input_fn(4)
    print("threads", ds.options().threading.private_threadpool_size,
          ds.options().threading.max_intra_op_parallelism)
    batch = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        print("sum", sum(float(sess.run(batch).sum()) for _ in range(3)))
    """)


def test_data_threadpool_at_its_tf1_path_sets_the_datasets_threading_options(tmp_path):
    script = tmp_path / "input.py"
    script.write_text(THREADPOOL_SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "threads 3 1" in done.stdout and "sum 66.0" in done.stdout
    assert not [f for f in check_file(str(script)) if f.error]


KERAS_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.keras import backend as K
    from tensorflow.python.keras.layers import Dense, BatchNormalization
    from tensorflow.python.keras.models import Sequential
    from tensorflow.python.keras.optimizers import Adam
    from tensorflow.python.keras.regularizers import l2
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    sess_config = tf.ConfigProto()
    custom_op = sess_config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    sess_config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    sess = tf.Session(config=sess_config)
    K.set_session(sess)
    print("same_session", tf.keras.backend.get_session() is sess, "K", K.__name__)

    rng = np.random.RandomState(0)
    x = rng.rand(64, 3).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = Sequential([Dense(8, activation="relu", input_shape=(3,), kernel_regularizer=l2(1e-4)),
                        BatchNormalization(), Dense(1)])
    model.compile(Adam(0.01), "mse")
    history = model.fit(x, y, epochs=5, verbose=0)
    print("losses_fall", history.history["loss"][-1] < history.history["loss"][0])
    sess.close()
    """)


def test_tensorflow_python_keras_is_the_keras_of_tf_keras(tmp_path):
    # Keras_swa style: K.set_session(npu session) on tensorflow.python.keras's backend must reach the tf.keras
    # models (TensorFlow 2.21's own tensorflow.python.keras is a separate copy with its own session).
    script = tmp_path / "train.py"
    script.write_text(KERAS_SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "same_session True K tf_keras.src.backend" in done.stdout
    assert "losses_fall True" in done.stdout


ESTIMATOR_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.estimator import estimator as est
    from tensorflow.python.estimator import model_fn as model_fn_lib
    from tensorflow.python.estimator.run_config import RunConfig
    from tensorflow.python.estimator.model_fn import EstimatorSpec


    def model_fn(features, labels, mode):
        pred = tf.layers.dense(features, 1)
        loss = tf.losses.mean_squared_error(labels, pred)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, tf.train.get_or_create_global_step())
        assert mode == model_fn_lib.ModeKeys.TRAIN
        return EstimatorSpec(mode, loss=loss, train_op=train_op)


    def input_fn():
        x = np.random.RandomState(0).rand(64, 2).astype(np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True))).repeat().batch(16)


    estimator = est.Estimator(model_fn, config=RunConfig(model_dir="model", save_checkpoints_steps=5))
    estimator.train(input_fn, max_steps=5)
    print("global_step", estimator.get_variable_value("global_step"), est.Estimator is tf.estimator.Estimator)
    """)


def test_tf1_estimator_implementation_paths_are_the_scripts_tf_estimator(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(ESTIMATOR_SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "global_step 5 True" in done.stdout
    assert not [f for f in check_file(str(script)) if f.error]
    script.write_text("from tensorflow.python.estimator.canned import head\n"  # TF 1's head module: provided
                      "import tensorflow.python.estimator.canned.dnn\n"
                      "import tensorflow.python.estimator.canned.kmeans\n")  # not provided: check says so
    assert [f.name for f in check_file(str(script)) if f.error] == ["tensorflow.python.estimator.canned.kmeans"]


KERAS_SESSION_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from npu_bridge.npu_init import *

    sess = set_keras_session_npu_config()
    print("keras_session", tf.keras.backend.get_session() is sess, type(sess).__name__)
    rng = np.random.RandomState(0)
    x = rng.rand(64, 3).astype("float32")
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                                 tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    history = model.fit(x, x.sum(axis=1, keepdims=True), epochs=5, verbose=0)
    print("losses_fall", history.history["loss"][-1] < history.history["loss"][0])
    npu_clear_session()
    print("cleared", tf.keras.backend.get_session() is not sess, type(tf.keras.backend.get_session()).__name__)
    print("npu_init_backend", backend.get_session() is tf.keras.backend.get_session())  # npu_init's `backend`
    """)


def test_set_keras_session_npu_config_and_npu_clear_session_give_tf_keras_an_npu_session(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(KERAS_SESSION_SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "keras_session True NPUSession" in done.stdout
    assert "losses_fall True" in done.stdout
    assert "cleared True NPUSession" in done.stdout
    assert "npu_init_backend True" in done.stdout
    assert not [f for f in check_file(str(script)) if f.error]


TPU_ESTIMATOR_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf


    def model_fn(features, labels, mode, params):
        pred = tf.layers.dense(features, 1)
        loss = tf.losses.mean_squared_error(labels, pred)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, tf.train.get_or_create_global_step())
        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


    def input_fn(params):
        x = np.random.RandomState(0).rand(64, 2).astype(np.float32)
        ds = tf.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True)))
        return ds.repeat().batch(params["batch_size"])


    config = tf.compat.v1.estimator.tpu.RunConfig(
        model_dir="model", tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(iterations_per_loop=2))
    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(use_tpu=False, model_fn=model_fn, config=config,
                                                        train_batch_size=8)
    estimator.train(input_fn, max_steps=4)
    print("global_step", estimator.get_variable_value("global_step"))
    """)


def test_tf_compat_v1_estimator_tpu_is_contrib_tpus_estimator_without_a_tpu(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TPU_ESTIMATOR_SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "global_step 4" in done.stdout
    assert not [f for f in check_file(str(script)) if f.error]
