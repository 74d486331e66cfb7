"""npu_bridge.estimator.npu.npu_dynamic_rnn: DynamicRNN (LSTM) and DynamicGRUV2, as ModelZoo's LSTM/Siamese/GNMT
scripts call them (time-major input, 8 / 6 outputs), computed with TensorFlow ops."""

import numpy as np
import pytest
import tensorflow as tf

import npurun.compat as compat

v1 = tf.compat.v1


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm_reference(x, w, b, forget_bias, lengths=None):
    """Numpy LSTM with the kernel's layout: one [input+hidden, 4*hidden] weight, gates i, j, f, o."""
    time, batch, _ = x.shape
    hidden = w.shape[1] // 4
    h, c = np.zeros((batch, hidden)), np.zeros((batch, hidden))
    ys, hs, cs = [], [], []
    for t in range(time):
        i, j, f, o = np.split(np.concatenate([x[t], h], 1) @ w + b, 4, axis=1)
        c_new = _sigmoid(f + forget_bias) * c + _sigmoid(i) * np.tanh(j)
        h_new = _sigmoid(o) * np.tanh(c_new)
        live = np.ones((batch, 1)) if lengths is None else (t < np.asarray(lengths))[:, None].astype(float)
        h, c = live * h_new + (1 - live) * h, live * c_new + (1 - live) * c
        ys.append(live * h_new)
        hs.append(h)
        cs.append(c)
    return np.stack(ys), np.stack(hs), np.stack(cs)


def _run(build):
    with tf.Graph().as_default(), compat.active():
        from npu_bridge.estimator.npu.npu_dynamic_rnn import DynamicGRUV2, DynamicRNN

        fetches = build(DynamicRNN, DynamicGRUV2)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            names = sorted(v.name for v in v1.global_variables())
            return sess.run(fetches), names


def test_dynamic_rnn_is_the_lstm_of_its_weight_over_time_major_input():
    x = np.random.RandomState(0).randn(6, 3, 4).astype(np.float32)

    def build(DynamicRNN, _):
        lstm = DynamicRNN(hidden_size=5, dtype=tf.float32, forget_bias=1.0)
        outputs = lstm(tf.constant(x))
        return outputs, v1.trainable_variables()

    (outputs, (w, b)), names = _run(build)
    assert len(outputs) == 8 and all(o.shape == (6, 3, 5) for o in outputs)
    y, h, c = _lstm_reference(x, w, b, forget_bias=1.0)
    np.testing.assert_allclose(outputs[0], y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs[1], h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs[2], c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs[7], np.tanh(c), rtol=1e-4, atol=1e-5)  # tanhc
    assert w.shape == (9, 20) and b.shape == (20,)
    # the adapter's variable names, so its checkpoints' keys match
    assert names == ["dynamic_rnn/dynamicbase/seq_length:0", "dynamic_rnn/dynamicrnn/b:0", "dynamic_rnn/dynamicrnn/w:0"]


def test_dynamic_rnn_seq_length_stops_each_sequence_and_bidirectional_runs_the_reverse():
    x = np.random.RandomState(1).randn(5, 2, 3).astype(np.float32)
    lengths = [5, 2]

    def build(DynamicRNN, _):
        masked = DynamicRNN(4, tf.float32)(tf.constant(x), seq_length=tf.constant(lengths))
        both = DynamicRNN(4, tf.float32, direction="BIDIRECTIONAL")(tf.constant(x))
        return masked, both, v1.trainable_variables()

    (masked, both, (w1, b1, w2, b2)), _ = _run(build)
    y, h, c = _lstm_reference(x, w1, b1, 0.0, lengths)
    np.testing.assert_allclose(masked[0], y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(masked[1], h, rtol=1e-4, atol=1e-5)
    assert np.all(masked[0][2:, 1] == 0)  # past its length the second sequence outputs zeros
    assert both[0].shape == (2, 5, 2, 4) and w2.shape == (2, 7, 16)
    forward, _, _ = _lstm_reference(x, w2[0], b2[0], 0.0)
    backward, _, _ = _lstm_reference(x[::-1], w2[1], b2[1], 0.0)
    np.testing.assert_allclose(both[0][0], forward, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(both[0][1], backward[::-1], rtol=1e-4, atol=1e-5)


def test_dynamic_gru_v2_is_a_gru_with_the_reset_after_the_hidden_product():
    x = np.random.RandomState(2).randn(4, 3, 2).astype(np.float32)

    def build(_, DynamicGRUV2):
        return DynamicGRUV2(3, dtype=tf.float32)(tf.constant(x)), v1.trainable_variables()

    (outputs, (w_in, w_hid, b_in, b_hid)), _ = _run(build)
    h = np.zeros((3, 3))
    expected = []
    for t in range(4):
        zx, rx, nx = np.split(x[t] @ w_in + b_in, 3, axis=1)
        zh, rh, nh = np.split(h @ w_hid + b_hid, 3, axis=1)
        z, r = _sigmoid(zx + zh), _sigmoid(rx + rh)
        h = z * h + (1 - z) * np.tanh(nx + r * nh)
        expected.append(h)
    assert len(outputs) == 6
    np.testing.assert_allclose(outputs[0], np.stack(expected), rtol=1e-4, atol=1e-5)


def test_a_second_call_of_the_same_layer_reuses_its_variables_and_training_lowers_the_loss():
    rng = np.random.RandomState(3)
    x = rng.randn(8, 16, 3).astype(np.float32)
    target = (x.sum(axis=(0, 2)) > 0).astype(np.float32)[:, None]

    def build(DynamicRNN, _):
        lstm = DynamicRNN(8, tf.float32)
        last = lstm(tf.constant(x))[0][-1]
        again = lstm(tf.constant(x))[0][-1]
        weights = v1.get_variable("out_w", [8, 1])
        bias = v1.get_variable("out_b", [1], initializer=v1.zeros_initializer())
        logits = tf.matmul(last, weights) + bias
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(target), logits=logits))
        train = v1.train.AdamOptimizer(0.05).minimize(loss)
        return loss, train, tf.reduce_max(tf.abs(last - again))

    with tf.Graph().as_default(), compat.active():
        from npu_bridge.estimator.npu.npu_dynamic_rnn import DynamicRNN

        loss, train, same = build(DynamicRNN, None)
        assert len(v1.trainable_variables()) == 4  # one LSTM weight and bias, the output weights and bias
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(60):
                sess.run(train)
            assert sess.run(loss) < 0.5 * first and sess.run(same) == 0


def test_options_it_does_not_compute_raise_naming_them():
    with compat.active():
        from npu_bridge.estimator.npu.npu_dynamic_rnn import DynamicRNN

        with pytest.raises(NotImplementedError, match="num_proj"):
            DynamicRNN(4, tf.float32, num_proj=2)
        with pytest.raises(NotImplementedError, match="use_peephole"):
            DynamicRNN(4, tf.float32, use_peephole=True)
