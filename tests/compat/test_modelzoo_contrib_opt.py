"""tf.contrib.opt's optimizers as ModelZoo scripts build them, trained under `npurun run` (one subprocess):
LGCN_ID1169's `npu_tf_optimizer(tf.contrib.opt.NadamOptimizer(lr))` and DPN's / doubleunet's
`NadamOptimizer(learning_rate=...)` (here over an embedding, a sparse gradient), SYMNET's
`AdamWOptimizer(5e-5, lr)`, wideresnet's `MomentumWOptimizer(0.000005, lr, 0.9)` under the UPDATE_OPS
dependency, and Jasper's open_seq2seq `AdamWOptimizer(learning_rate=lr, weight_decay=wd * lr)` through
compute_gradients / apply_gradients; object_detection's (SSD-Resnet50V1-FPN_ID1463)
`MovingAverageOptimizer(optimizer, average_decay=...)` through `tf.contrib.layers.optimize_loss` with its eval's
`ExponentialMovingAverage(0.0).variables_to_restore()` saver, and AVOD_ID0818's
`npu_tf_optimizer(MovingAverageOptimizer(...))` through `slim.learning.create_train_op`."""
import textwrap

import pytest

from .conftest import run_compat

SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    from npu_bridge.npu_init import *

    rng = np.random.RandomState(0)
    features = rng.randn(64, 6).astype(np.float32)
    ids = rng.randint(0, 10, size=64)
    labels = (features[:, 0] + 0.1 * ids > 0.5).astype(np.int64)

    def model(name):
        with tf.variable_scope(name):
            x = tf.placeholder(tf.float32, [None, 6])
            words = tf.placeholder(tf.int32, [None])
            y = tf.placeholder(tf.int64, [None])
            table = tf.get_variable("embedding", [10, 4])
            hidden = tf.concat([x, tf.nn.embedding_lookup(table, words)], 1)
            hidden = tf.layers.batch_normalization(tf.layers.dense(hidden, 16, tf.nn.relu), training=True)
            logits = tf.layers.dense(hidden, 2)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        return loss, {x: features, words: ids, y: labels}

    def train(name, make_train_op, steps=30):
        loss, feed = model(name)
        step = tf.train.get_or_create_global_step()
        train_op, optimizer = make_train_op(loss, step)
        variables = tf.trainable_variables(name)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, feed)
            for _ in range(steps):
                sess.run(train_op, feed)
            last = sess.run(loss, feed)
            if name in ("ssd", "avod"):
                path = saver.save(sess, "./" + name + ".ckpt")
                averages = [v.op.name for v in tf.global_variables()
                            if v.op.name.endswith(variables[0].op.name + "/ExponentialMovingAverage")]
                average, value = sess.run([averages[0] + ":0", variables[0]])
                print(name, "average", averages, not np.allclose(average, value))
        if name == "ssd":
            with tf.Graph().as_default():  # object_detection's eval: the averages restored into the variables
                model(name)
                restore = tf.train.Saver(tf.train.ExponentialMovingAverage(0.0).variables_to_restore())
                with tf.Session() as sess:
                    restore.restore(sess, path)
                    print(name, "restored the average", np.allclose(sess.run(tf.trainable_variables(name)[0]), average))
        slots = sorted(optimizer.get_slot_names())
        embedding_slots = sorted(optimizer.get_slot(variables[0], s).op.name for s in slots)
        print(name, "falls", last < 0.8 * first, type(optimizer).__name__, slots, embedding_slots)

    def lgcn(loss, step):  # LGCN_ID1169 network.py
        optimizer = npu_tf_optimizer(tf.contrib.opt.NadamOptimizer(0.01))
        return optimizer.minimize(loss, global_step=step), optimizer

    def dpn(loss, step):  # DPN_ID1636 train_npu.py
        optimizer = tf.contrib.opt.NadamOptimizer(learning_rate=0.01)
        return optimizer.minimize(loss, global_step=step), optimizer

    def symnet(loss, step):  # SYMNET_ID1292 utils/base_solver.py
        optimizer = tf.contrib.opt.AdamWOptimizer(5e-5, 0.01)
        return optimizer.minimize(loss, global_step=step), optimizer

    def wideresnet(loss, step):  # wideresnet_ID0175 run_wideresnet.py
        optimizer = tf.contrib.opt.MomentumWOptimizer(0.000005, 0.05, 0.9)
        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            return optimizer.minimize(loss, global_step=step), optimizer

    def jasper(loss, step):  # Jasper_ID0020 open_seq2seq/optimizers/optimizers.py
        lr = tf.constant(0.01)
        optimizer_params = {"weight_decay": 0.001}
        optimizer_params["weight_decay"] = optimizer_params["weight_decay"] * lr
        opt = tf.contrib.opt.AdamWOptimizer(learning_rate=lr, **optimizer_params)
        grads_and_vars = opt.compute_gradients(loss, colocate_gradients_with_ops=True)
        return opt.apply_gradients(grads_and_vars, global_step=step), opt

    def ssd(loss, step):  # SSD-Resnet50V1-FPN_ID1463 builders/optimizer_builder.py and model_lib.py
        optimizer = tf.train.MomentumOptimizer(0.05, momentum=0.9)
        optimizer = tf.contrib.opt.MovingAverageOptimizer(optimizer, average_decay=0.9)
        train_op = tf.contrib.layers.optimize_loss(loss=loss, global_step=step, learning_rate=None,
                                                   clip_gradients=None, optimizer=optimizer,
                                                   update_ops=tf.get_collection(tf.GraphKeys.UPDATE_OPS), name="")
        return train_op, optimizer

    def avod(loss, step):  # AVOD_ID0818 avod/builders/optimizer_builder.py and avod/core/trainer.py
        optimizer = tf.train.AdamOptimizer(0.01)
        optimizer = npu_tf_optimizer(tf.contrib.opt.MovingAverageOptimizer(optimizer, average_decay=0.9))
        with tf.variable_scope("train_op"):
            train_op = tf.contrib.slim.learning.create_train_op(loss, optimizer, clip_gradient_norm=1.0,
                                                                global_step=step)
        return train_op, optimizer

    for name, make in [("lgcn", lgcn), ("dpn", dpn), ("symnet", symnet), ("wideresnet", wideresnet),
                       ("jasper", jasper), ("ssd", ssd), ("avod", avod)]:
        with tf.Graph().as_default():
            train(name, make)
    print("done")
    """)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contrib_opt")
    (folder / "train.py").write_text(SCRIPT)
    return run_compat("run", folder / "train.py", cwd=folder)


def test_the_scripts_train_with_their_contrib_optimizers(ran):
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = ran.stdout
    assert "done" in out, out
    prefix = "['m', 'v']"
    assert f"lgcn falls True NPUDistributedOptimizer {prefix} ['lgcn/embedding/Adam', 'lgcn/embedding/Adam_1']" in out
    assert f"dpn falls True NadamOptimizer {prefix} ['dpn/embedding/Adam', 'dpn/embedding/Adam_1']" in out, out
    assert f"symnet falls True AdamWOptimizer {prefix} ['symnet/embedding/AdamW', 'symnet/embedding/AdamW_1']" in out
    assert "wideresnet falls True MomentumWOptimizer ['momentum'] ['wideresnet/embedding/MomentumW']" in out, out
    assert f"jasper falls True AdamWOptimizer {prefix} ['jasper/embedding/AdamW', 'jasper/embedding/AdamW_1']" in out
    assert "ssd falls True MovingAverageOptimizer ['momentum'] ['ssd/embedding/Momentum']" in out, out
    avod = "['train_op/avod/embedding/Adam', 'train_op/avod/embedding/Adam_1']"
    assert f"avod falls True NPUDistributedOptimizer {prefix} {avod}" in out, out


def test_the_moving_averages_are_what_the_eval_restores(ran):
    out = ran.stdout
    assert "ssd average ['ssd/embedding/ExponentialMovingAverage'] True" in out, out
    assert "ssd restored the average True" in out, out
    # (create_train_op's variable scope prefixes the averages, as TensorFlow's slot names always were)
    assert "avod average ['train_op/avod/embedding/ExponentialMovingAverage'] True" in out, out


def test_the_run_is_quiet(ran):
    assert "AdapterAPIError" not in ran.stderr and "Traceback" not in ran.stderr, ran.stderr[-3000:]
