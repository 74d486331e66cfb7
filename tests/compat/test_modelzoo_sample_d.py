"""Issue 23's second random sample (seed 2026), part d: gaps its real scripts hit, each in the style of the
script that hit it (docs/compat.md, "Second random sample (seed 2026)"); each test failed before its fix.

One `npurun run` subprocess runs one script with a section per gap (each prints its own line or the error it
raised), so the gaps cost one start-up of TensorFlow together.
"""
import pytest

SAMPLE_D_SCRIPT = '''\
from npu_bridge.npu_init import *
import os
import numpy as np
import tensorflow as tf
import tensorflow.python.keras as keras


def section(name, body):
    try:
        body()
    except Exception as error:  # each section reports its own failure; the others still run
        print(name, "raised", type(error).__name__, error)


# DIN_ID0190's din_demo.py (and 4 more folders): a tf.keras model compiled on the NPU session, the adapter's
# broadcast callback next to the script's own timing callback.
class BatchCounter(keras.callbacks.Callback):
    def on_train_begin(self, logs={}):
        self.batches = 0

    def on_train_batch_end(self, batch, logs={}):
        self.batches += 1


def keras_broadcast_callback():
    config_proto = tf.ConfigProto()
    custom_op = config_proto.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    config_proto.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    npu_keras_sess = set_keras_session_npu_config(config=config_proto)
    features = np.random.RandomState(0).rand(32, 6).astype(np.float32)
    labels = (features.sum(axis=1, keepdims=True) > 3).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    opt = npu_distributed_optimizer_wrapper(tf.keras.optimizers.Adam(learning_rate=1e-3))
    model.compile(opt, "binary_crossentropy", metrics=["binary_crossentropy"])
    counter = BatchCounter()
    broadcast = NPUBroadcastGlobalVariablesCallback(0)
    callbacks = npu_callbacks_append(callbacks_list=[broadcast, counter])
    history = model.fit(features, labels, batch_size=8, epochs=2, verbose=0, callbacks=callbacks)
    print("keras_bcast", counter.batches, len(history.history["loss"]), broadcast.broadcast_done,
          len(callbacks), type(callbacks[-1]).__name__, callbacks[-1].broadcast_done)


section("keras_bcast", keras_broadcast_callback)


# deeplab-v3-plus's deeplab/train.py and eval.py (DeepLab copies of 3 more folders): a ProfileContext that is
# off unless --profile_logdir is given, around slim's training loop; a model analysis printed in eval.
def tfprof_profile_context():
    from tensorflow.contrib import tfprof as contrib_tfprof

    profile_dir = None
    with tf.Graph().as_default():
        weights = tf.get_variable("weights", [3, 4], initializer=tf.zeros_initializer())
        bias = tf.get_variable("bias", [4], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.ones([2, 3]), weights) + bias
        with contrib_tfprof.ProfileContext(enabled=profile_dir is not None, profile_dir=profile_dir):
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                out = sess.run(logits)
        analysis = contrib_tfprof.model_analyzer.print_model_analysis(
            tf.get_default_graph(),
            tfprof_options=contrib_tfprof.model_analyzer.TRAINABLE_VARS_PARAMS_STAT_OPTIONS)
        options = contrib_tfprof.model_analyzer.FLOAT_OPS_OPTIONS
        options["output"] = "none"
        contrib_tfprof.model_analyzer.print_model_analysis(tf.get_default_graph(), tfprof_options=options)
    try:
        contrib_tfprof.ProfileContext(enabled=True, profile_dir="/tmp/profile")
        enabled = "no error"
    except NotImplementedError as error:
        enabled = "enabled raises" if "ProfileContext" in str(error) else str(error)
    print("tfprof", out.shape, analysis.total_parameters, enabled)


section("tfprof", tfprof_profile_context)


# MNN-LANENET_ID1251's cnn_basenet.py (and CRNN_Kernel_ID0055's copy): a grouped conv's filter shape built with
# Python 3 division, `in_channel / split` is a float.
def float_filter_dimension():
    with tf.Graph().as_default():
        inputdata = tf.placeholder(tf.float32, [2, 8, 8, 6])
        in_channel, split, out_channel = inputdata.get_shape().as_list()[3], 2, 4
        with tf.variable_scope("conv_block"):
            filter_shape = [3, 3] + [in_channel / split, out_channel]
            w = tf.get_variable("W", filter_shape, initializer=tf.contrib.layers.variance_scaling_initializer())
        parts = tf.split(inputdata, split, axis=3)
        out = tf.concat([tf.nn.conv2d(p, w, [1, 1, 1, 1], "SAME") for p in parts], axis=3)
        try:
            tf.get_variable("V", [2.5, 3])
            ambiguous = "accepted"
        except ValueError as error:
            ambiguous = str(error)
    print("float_dim", w.shape.as_list(), out.shape.as_list(), ambiguous)


section("float_dim", float_filter_dimension)


# ViDeNN_ID1146's main_spatialCNN.py: a static session and a dynamic-input session are made first, then the
# model class builds one graph for both; the static one trains on batches, the dynamic one evaluates single
# images of any size in its range.
def sessions_before_their_graph():
    config_dynamic = tf.ConfigProto()
    custom_op = config_dynamic.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["dynamic_input"].b = True
    custom_op.parameter_map["dynamic_graph_execute_mode"].s = tf.compat.as_bytes("dynamic_execute")
    custom_op.parameter_map["dynamic_inputs_shape_range"].s = tf.compat.as_bytes(
        "data:[1,20~800,20~800,3],[],[1,20~800,20~800,3]")
    config_static = tf.ConfigProto()
    custom_op_ = config_static.graph_options.rewrite_options.custom_optimizers.add()
    custom_op_.name = "NpuOptimizer"
    with tf.Graph().as_default():
        sess_static = tf.Session(config=config_static)
        sess_dynamic = tf.Session(config=config_dynamic)
        clean = tf.placeholder(tf.float32, [None, None, None, 3], name="clean_image")
        is_training = tf.placeholder(tf.bool, name="is_training")
        noisy = tf.placeholder(tf.float32, [None, None, None, 3], name="noisy_image")
        with tf.variable_scope("static_graph"):
            out = tf.layers.conv2d(noisy, 3, 3, padding="same")
            loss = tf.reduce_mean(tf.square(clean - out))
            train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
        sess_static.run(init)
        sess_dynamic.run(init)
        batch = np.zeros([4, 24, 24, 3], np.float32)
        sess_static.run(train_op, {clean: batch, noisy: batch, is_training: True})
        image = np.zeros([1, 40, 56, 3], np.float32)
        evaluated = sess_dynamic.run(out, {clean: image, noisy: image, is_training: False})
        try:
            sess_dynamic.run(out, {clean: batch, noisy: batch, is_training: False})
            refused = "accepted"
        except ValueError as error:
            refused = str(error)
    print("sessions_first", evaluated.shape, refused)


section("sessions_first", sessions_before_their_graph)


# deeplab-v3-plus's deeplab/eval.py (and 7 more folders): an IoU that is NaN for a class never seen, written with
# NumPy 1's np.NaN; np.Inf / np.product elsewhere.
def numpy2_removed_names():
    tp, fn, fp = tf.constant(0.0), tf.constant(0.0), tf.constant(0.0)
    iou = tf.where(tf.greater(tp + fn, 0.0), tp / (tp + fn + fp), tf.constant(np.NaN))
    with tf.Session() as sess:
        value = sess.run(iou)
    print("numpy2", np.isnan(value), np.Inf == np.inf, np.product([2, 3]), np.NINF < 0)


section("numpy2", numpy2_removed_names)


# deeplab-v3-plus's deeplab/eval.py (contrib.metrics' aggregate_metric_map: 11 folders; contrib.training's
# evaluation loop: 4): metrics of a restored checkpoint, evaluated once, summaries written at the end.
def contrib_training_evaluation():
    from tensorflow.contrib import metrics as contrib_metrics
    from tensorflow.contrib import training as contrib_training
    import tempfile

    folder = tempfile.mkdtemp()
    with tf.Graph().as_default():
        weight = tf.get_variable("weight", [], initializer=tf.constant_initializer(2.0))
        tf.train.get_or_create_global_step()  # a training checkpoint has the step, which evaluation reads
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, folder + "/model.ckpt", global_step=2)
    with tf.Graph().as_default():
        weight = tf.get_variable("weight", [], initializer=tf.zeros_initializer())
        metric_map = {"eval/mean": tf.metrics.mean(weight * tf.constant([1.0, 2.0]))}
        values, updates = contrib_metrics.aggregate_metric_map(metric_map)
        summary_op = tf.summary.merge([tf.summary.scalar(k, v) for k, v in values.items()])
        hooks = [contrib_training.SummaryAtEndHook(log_dir=folder + "/eval", summary_op=summary_op),
                 contrib_training.StopAfterNEvalsHook(1)]
        final = contrib_training.evaluate_once(path, eval_ops=list(updates.values()), final_ops=values, hooks=hooks)
    print("slim_eval", final["eval/mean"], sorted(os.listdir(folder + "/eval"))[0].startswith("events"))


section("slim_eval", contrib_training_evaluation)


# InceptionV3_ID0504's logger.py (and the built-in CV template of 30 more folders): a hook fetching model_fn's
# named scalars by name, 'total_loss:0' being the AddN tf.losses.get_total_loss() names so (the identity
# after it is 'total_loss_1'), with iterations_per_loop 2.
class LogSessionRunHook(tf.train.SessionRunHook):
    def __init__(self):
        self.lines = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(
            fetches=[tf.train.get_global_step(), 'loss:0', 'total_loss:0', 'learning_rate:0'])

    def after_run(self, run_context, run_values):
        global_step, loss, total_loss, lr = run_values.results
        self.lines.append((round(float(total_loss - loss), 4) >= 0, round(float(lr), 4)))


def named_total_loss_by_name():
    def model_fn(features, labels, mode):
        logits = tf.layers.dense(features, 3, kernel_regularizer=tf.contrib.layers.l2_regularizer(0.1))
        loss = tf.losses.softmax_cross_entropy(logits=logits, onehot_labels=tf.one_hot(labels, 3))
        base_loss = tf.identity(loss, name='loss')
        total_loss = tf.losses.get_total_loss(add_regularization_losses=True)
        total_loss = tf.identity(total_loss, name='total_loss')
        learning_rate = tf.identity(tf.constant(0.01) * 1.0, 'learning_rate')
        opt = tf.train.MomentumOptimizer(learning_rate=learning_rate, momentum=0.9)
        train_op = opt.minimize(total_loss, global_step=tf.train.get_global_step())
        return NPUEstimatorSpec(mode, loss=total_loss, train_op=train_op)

    def input_fn():
        features = np.random.RandomState(0).rand(16, 4).astype(np.float32)
        labels = np.arange(16, dtype=np.int32) % 3
        return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(4, drop_remainder=True)

    import tempfile
    config = NPURunConfig(model_dir=tempfile.mkdtemp(), iterations_per_loop=2, save_checkpoints_steps=4)
    hook = LogSessionRunHook()
    NPUEstimator(model_fn=model_fn, config=config).train(input_fn=input_fn, max_steps=4, hooks=[hook])
    print("total_loss", hook.lines)


section("total_loss", named_total_loss_by_name)
'''


@pytest.fixture(scope="module")
def sample_d_run(tmp_path_factory):
    from .conftest import run_compat

    folder = tmp_path_factory.mktemp("sample_d")
    (folder / "train.py").write_text(SAMPLE_D_SCRIPT)
    done = run_compat("run", folder / "train.py", cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_npu_broadcast_callback_runs_in_a_tf_keras_fit(sample_d_run):
    # 2 epochs of 4 batches; the callback broadcast once (nothing to send with one rank); npu_callbacks_append
    # appended a second one to the script's list, which ran too.
    assert "keras_bcast 8 2 True 3 NPUBroadcastGlobalVariablesCallback True" in sample_d_run, sample_d_run[-2000:]


def test_a_float_dimension_with_an_integral_value_is_that_int_as_in_tf115(sample_d_run):
    assert "float_dim [3, 3, 3, 4] [2, 8, 8, 8] Ambiguous dimension: 2.5" in sample_d_run, sample_d_run[-2000:]


def test_data_shape_ranges_of_a_session_made_before_its_graph_apply_to_that_session_only(sample_d_run):
    # the static session trains on batches of 4; the dynamic one evaluates a 1x40x56 image, refuses a batch of 4
    assert ("sessions_first (1, 40, 56, 3) dynamic_inputs_shape_range: data input 0 (clean_image), dimension 0: "
            "size 4 is outside 1") in sample_d_run, sample_d_run[-2000:]


def test_numpy2_removed_names_of_tf115s_numpy(sample_d_run):
    assert "numpy2 True True 6 True" in sample_d_run, sample_d_run[-2000:]


def test_contrib_training_evaluation_and_metrics_helpers_are_tf_slims(sample_d_run):
    assert "slim_eval 3.0 True" in sample_d_run, sample_d_run[-2000:]


def test_a_hook_fetches_total_loss_by_name_out_of_a_device_loop(sample_d_run):
    # two host calls of 2 iterations; the total loss (with the regularisation) >= the cross entropy; the learning rate
    assert "total_loss [(True, 0.01), (True, 0.01)]" in sample_d_run, sample_d_run[-2000:]


def test_contrib_tfprof_profile_context_off_and_model_analyzer(sample_d_run):
    # 3 * 4 + 4 trainable parameters counted by TensorFlow's profiler; an enabled context says it is not provided
    assert "tfprof (2, 4) 16 enabled raises" in sample_d_run, sample_d_run[-2000:]
