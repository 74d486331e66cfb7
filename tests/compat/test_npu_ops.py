"""npu_ops.dropout: inverted dropout with keep_prob (tf.nn.dropout semantics); the no-op system ops."""
import numpy as np
import pytest
import tensorflow as tf

from npurun.adapter.npu_ops import dropout, initialize_system, shutdown_system

v1 = tf.compat.v1


def _run(fetch, feed=None):
    with v1.Session() as sess:
        return sess.run(fetch, feed)


def test_keeps_with_probability_keep_prob_and_scales_by_its_inverse():
    with tf.Graph().as_default():
        v1.set_random_seed(3)
        values = _run(dropout(tf.ones((200, 100)), keep_prob=0.8))
    kept = values != 0
    assert 0.77 < kept.mean() < 0.83
    np.testing.assert_allclose(values[kept], 1 / 0.8, rtol=1e-6)
    assert abs(values.mean() - 1.0) < 0.03  # inverted dropout keeps the expectation


def test_keep_prob_one_is_the_input_itself_and_bad_values_are_rejected():
    with tf.Graph().as_default():
        x = tf.ones((3,))
        assert dropout(x, 1.0) is x
        for bad in (0, 0.0, 1.5, -0.1):
            with pytest.raises(ValueError, match="keep_prob must be a scalar tensor or a number in"):
                dropout(x, bad)
        with pytest.raises(ValueError, match="floating point"):
            dropout(tf.ones((3,), tf.int32), 0.5)


def test_keep_prob_tensor_noise_shape_and_seed():
    with tf.Graph().as_default():
        keep = v1.placeholder(tf.float32, [])
        x = tf.ones((50, 40))
        y = dropout(x, keep, noise_shape=[50, 1], seed=7)
        rows = _run(y, {keep: 0.5})
        assert all(len(set(row)) == 1 for row in rows)  # one decision per row
        assert set(np.unique(rows)) <= {0.0, 2.0}
        v1.set_random_seed(1)
        a = dropout(x, 0.5, seed=5)
        with v1.Session() as s1, v1.Session() as s2:
            np.testing.assert_array_equal(s1.run(a), s2.run(a))  # graph seed + op seed: reproducible


def test_gradient_flows_through_kept_elements_only():
    with tf.Graph().as_default():
        v1.set_random_seed(2)
        x = tf.ones((1000,))
        y = dropout(x, 0.5)
        out, grad = _run([y, tf.gradients(tf.reduce_sum(y), x)[0]])
        np.testing.assert_allclose(grad, out)  # d(sum)/dx is the mask scaled by 1/keep_prob


def test_system_ops_are_no_ops():
    with tf.Graph().as_default():
        init, shutdown = initialize_system(), shutdown_system()
        assert init.type == "NoOp" and shutdown.type == "NoOp" and init.name == "NPUInit"
        _run([init, shutdown])


def test_gelu_is_the_tanh_approximation_and_gelu_grad_its_derivative():
    from npurun.adapter.npu_ops import gelu, gelu_grad

    xs = np.linspace(-6, 6, 49).astype(np.float32)
    expected = 0.5 * xs * (1 + np.tanh(np.sqrt(2 / np.pi) * (xs + 0.044715 * xs ** 3)))
    with tf.Graph().as_default():
        x = tf.constant(xs)
        y = gelu(x)
        autodiff, = tf.gradients(y, x)
        values, auto, manual = _run((y, autodiff, gelu_grad(tf.ones_like(x), x, y)))
    np.testing.assert_allclose(values, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(manual, auto, rtol=1e-4, atol=1e-6)
    # central differences of the reference formula
    step = 1e-3
    f = lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))  # noqa: E731
    numeric = (f(xs.astype(np.float64) + step) - f(xs.astype(np.float64) - step)) / (2 * step)
    np.testing.assert_allclose(manual, numeric, rtol=1e-3, atol=1e-4)


def test_gelu_through_the_adapter_module_path(active):
    from npu_bridge.estimator.npu_unary_ops import npu_unary_ops
    from npu_bridge.npu_init import npu_unary_ops as from_init

    assert from_init is npu_unary_ops
    with tf.Graph().as_default():
        assert _run(npu_unary_ops.gelu(tf.constant([0.0, 1.0])))[1] == pytest.approx(0.841192, abs=1e-5)
