"""tf.compat.v1.layers as TF 1.x had it: variable names, reuse, collections, and the computations."""
import numpy as np
import pytest
import tensorflow as tf

from npurun.tf1 import layers

v1 = tf.compat.v1


def _run(fetches, feed=None):
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        return sess.run(fetches, feed)


def _var(name):
    return next(v for v in v1.global_variables() if v.op.name == name)


def _names(collection=v1.GraphKeys.GLOBAL_VARIABLES):
    return [v.op.name for v in v1.get_collection(collection)]


def test_dense_names_uniquifies_reuses_and_computes():
    with tf.Graph().as_default():
        x = tf.constant(np.ones((2, 3), np.float32))
        y1 = layers.dense(x, 4, activation=tf.nn.relu, kernel_initializer=v1.ones_initializer())
        layers.dense(x, 4)
        layers.dense(x, 2, name="logits", kernel_regularizer=lambda w: tf.reduce_sum(w))
        y4 = layers.dense(x, 2, name="logits", reuse=True)
        assert _names() == ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias", "logits/kernel",
                            "logits/bias"]
        assert len(v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES)) == 1
        out1, out4 = _run([y1, y4])
        np.testing.assert_allclose(out1, np.full((2, 4), 3.0))
        assert out4.shape == (2, 2)
        y3d = layers.dense(tf.ones((2, 5, 3)), 6)
        assert y3d.shape.as_list() == [2, 5, 6]


def test_conv_pool_flatten_shapes():
    with tf.Graph().as_default():
        x = tf.ones((2, 8, 8, 3))
        net = layers.conv2d(x, 5, 3, padding="same", activation=tf.nn.relu)
        assert net.shape.as_list() == [2, 8, 8, 5]
        assert _names() == ["conv2d/kernel", "conv2d/bias"]
        assert _var("conv2d/kernel").shape.as_list() == [3, 3, 3, 5]
        assert layers.conv2d(x, 4, (3, 3), strides=2).shape.as_list() == [2, 3, 3, 4]
        assert layers.max_pooling2d(net, 2, 2).shape.as_list() == [2, 4, 4, 5]
        assert layers.average_pooling2d(net, 3, 1, padding="same").shape.as_list() == [2, 8, 8, 5]
        assert layers.flatten(net).shape.as_list() == [2, 320]
        channels_first = tf.reshape(tf.range(8.0), (1, 2, 2, 2))
        np.testing.assert_allclose(_run(layers.flatten(channels_first, data_format="channels_first")),
                                   [[0, 4, 1, 5, 2, 6, 3, 7]])
        with pytest.raises(ValueError, match="padding"):
            layers.conv2d(x, 4, 3, padding="full")


def test_dropout_follows_training_flag():
    with tf.Graph().as_default():
        x = tf.ones((1000,))
        training = v1.placeholder(tf.bool, [])
        y = layers.dropout(x, rate=0.5, training=training, seed=1)
        off = layers.dropout(x, rate=0.5)  # training=False by default
        on_values = _run(y, {training: True})
        assert set(np.unique(on_values)) <= {0.0, 2.0} and 350 < np.count_nonzero(on_values) < 650
        np.testing.assert_allclose(_run(y, {training: False}), 1.0)
        np.testing.assert_allclose(_run(off), 1.0)


def test_batch_normalization_training_inference_and_update_ops():
    rng = np.random.RandomState(0)
    data = rng.normal(3.0, 2.0, size=(64, 4)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(data)
        training = v1.placeholder(tf.bool, [])
        y = layers.batch_normalization(x, momentum=0.5, training=training)
        assert _names() == ["batch_normalization/gamma", "batch_normalization/beta",
                            "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
        assert [v.op.name for v in v1.trainable_variables()] == ["batch_normalization/gamma",
                                                                 "batch_normalization/beta"]
        updates = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        assert len(updates) == 2
        moving_mean = _var("batch_normalization/moving_mean")
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            out, _ = sess.run([y, updates], {training: True})
            np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-4)
            np.testing.assert_allclose(out.std(axis=0), 1.0, atol=1e-2)
            np.testing.assert_allclose(sess.run(moving_mean), 0.5 * data.mean(axis=0), rtol=1e-4)
            inference = sess.run(y, {training: False})
            np.testing.assert_allclose(inference, (data - sess.run(moving_mean)) / np.sqrt(
                sess.run(_var("batch_normalization/moving_variance")) + 1e-3), rtol=1e-4)
        # As in TF 1, the moving statistics are not "moving average variables" (that collection is for
        # ExponentialMovingAverage's shadows): EMA.variables_to_restore() must not ask for their shadows.
        assert v1.get_collection(v1.GraphKeys.MOVING_AVERAGE_VARIABLES) == []


def test_ema_variables_to_restore_match_a_checkpoint_of_a_batch_norm_model(tmp_path):
    """ModelZoo evaluation restores EMA shadows with variables_to_restore(); every key must be in the checkpoint."""
    def model():
        x = tf.constant(np.random.RandomState(0).normal(size=(8, 4)).astype(np.float32))
        net = layers.dense(x, 3, name="fc")
        net = layers.batch_normalization(net, training=True, name="bn")
        return tf.reduce_mean(tf.square(net))

    with tf.Graph().as_default():
        loss = model()
        step = v1.train.get_or_create_global_step()
        ema = v1.train.ExponentialMovingAverage(0.9, step)
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        with tf.control_dependencies([train, *v1.get_collection(v1.GraphKeys.UPDATE_OPS)]):
            train = ema.apply(v1.trainable_variables())
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train)
            path = v1.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    saved = {name for name, _ in tf.train.list_variables(path)}
    with tf.Graph().as_default():
        model()
        wanted = v1.train.ExponentialMovingAverage(0.9).variables_to_restore()
    assert "bn/moving_mean" in wanted and "fc/kernel/ExponentialMovingAverage" in wanted
    assert set(wanted) <= saved, sorted(set(wanted) - saved)
