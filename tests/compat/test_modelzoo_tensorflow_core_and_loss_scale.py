"""TF 1.15 names two groups of ModelZoo scripts use: imports through `tensorflow_core` (TF 1.15's package of
TensorFlow's code: realnvp, OSNet_ID1379, ArcFace_ID0887, MONODEPTH_ID2099, BicycleGAN_ID1287, ...) and
`tf.contrib.mixed_precision`'s LossScaleOptimizer with its managers (Transformer_ID0004, Attention-OCR_ID2013,
Bert_Nv_Finetune_MPRC_ID1641, ...). The script is written in their style; `npurun check` must agree with the run."""
import textwrap

from npurun.tools.check import check_source

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    import tensorflow_core.contrib.slim as slim
    from tensorflow_core.core.protobuf.rewriter_config_pb2 import RewriterConfig
    from tensorflow_core.python.tools import freeze_graph
    from tensorflow_core.contrib.mixed_precision.python.loss_scale_manager import ExponentialUpdateLossScaleManager
    from npu_bridge.npu_init import *


    def build(images, labels):
        net = slim.conv2d(images, 4, 3, scope="conv1")
        logits = slim.fully_connected(slim.flatten(net), 3, activation_fn=None, scope="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


    def main():
        config = tf.ConfigProto()
        config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
        images = tf.placeholder(tf.float32, [None, 6, 6, 1])
        labels = tf.placeholder(tf.int64, [None])
        loss = build(images, labels)
        global_step = tf.train.get_or_create_global_step()
        manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 10, incr_every_n_steps=2,
                                                    decr_every_n_nan_or_inf=1, decr_ratio=0.5)
        opt = tf.contrib.mixed_precision.LossScaleOptimizer(tf.train.GradientDescentOptimizer(0.5), manager)
        train_op = opt.minimize(loss, global_step=global_step)
        poison = tf.placeholder_with_default(1.0, [])
        bad_op = opt.minimize(loss * poison, global_step=global_step)
        rng = np.random.RandomState(0)
        feed = {images: rng.rand(8, 6, 6, 1), labels: rng.randint(0, 3, 8)}
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, feed)
            scales = []
            for _ in range(4):
                sess.run(train_op, feed)
                scales.append(sess.run(manager.get_loss_scale()))
            step = sess.run(global_step)
            before = sess.run(tf.trainable_variables())
            sess.run(bad_op, {**feed, poison: float("nan")})
            after = sess.run(tf.trainable_variables())
            print("losses_fall", sess.run(loss, feed) < first, "step", step, "after_nan_step", sess.run(global_step))
            print("scales", [float(s) for s in scales], "after_nan", float(sess.run(manager.get_loss_scale())))
            print("nan_step_skipped", all(np.array_equal(a, b) for a, b in zip(before, after)))
        print("freeze_graph", callable(freeze_graph.freeze_graph))


    if __name__ == "__main__":
        main()
    """)


def test_tensorflow_core_imports_and_contrib_loss_scaling_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = run_compat("run", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "losses_fall True step 4 after_nan_step 4" in out, out
    # doubled every 2 finite steps; one overflowing step halves it (decr_every_n_nan_or_inf=1)
    assert "scales [1024.0, 2048.0, 2048.0, 4096.0] after_nan 2048.0" in out, out
    assert "nan_step_skipped True" in out and "freeze_graph True" in out, out


def test_check_judges_tensorflow_core_as_tensorflow():
    findings = check_source(SCRIPT, "train.py")
    assert not [f for f in findings if f.error], [f for f in findings if f.error]
    names = {f.name for f in findings}
    assert "tensorflow.contrib.slim" in names, names  # judged as the TensorFlow 1 path it is
    missing = check_source(SCRIPT + "tensorflow_core_contrib = tf.contrib.no_such_module.thing\n", "train.py")
    assert any(f.error and "no_such_module" in f.name for f in missing)
