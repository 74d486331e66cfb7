"""tf.contrib.opt's Nadam / AdamW / MomentumW / MovingAverage optimizers (npurun.tf1.contrib.opt) against TF 1.15's
update formulas in NumPy.

Graph mode, reference and resource variables, dense and sparse (IndexedSlices, with a duplicate index)
gradients, three steps each."""
import numpy as np
import pytest
import tensorflow as tf

from npurun.tf1.contrib import opt

v1 = tf.compat.v1
RNG = np.random.RandomState(3)
START = RNG.randn(4, 3)
DENSE_GRADS = [RNG.randn(4, 3) for _ in range(3)]
ROWS = [np.array([0, 2, 2]), np.array([1]), np.array([3, 0])]  # step 1 repeats row 2: its gradients are summed
ROW_GRADS = [RNG.randn(len(rows), 3) for rows in ROWS]
LR, B1, B2, EPS, WD, MOMENTUM = 0.01, 0.9, 0.999, 1e-8, 0.1, 0.9


def _summed(rows, values):
    grad = np.zeros_like(START)
    np.add.at(grad, rows, values)
    unique = np.unique(rows)
    return unique, grad[unique]


def _numpy_adam(t, var, m, v, rows, g, nesterov=False, decay=0.0, sparse=False):
    """One step of TF 1.15's (decoupled-decay) Adam; dense when `rows` is None, else v1 Adam's / Nadam's
    scatter form (m and v decay everywhere; Nadam moves only the rows, Adam the whole variable)."""
    lr_t = LR * np.sqrt(1 - B2 ** t) / (1 - B1 ** t)
    if rows is None:
        var -= decay * var
        m[:] = B1 * m + (1 - B1) * g
        v[:] = B2 * v + (1 - B2) * g * g
        top = B1 * m + (1 - B1) * g if nesterov else m
        var -= lr_t * top / (np.sqrt(v) + EPS)
        return
    var[rows] -= decay * var[rows]
    m *= B1
    m[rows] += (1 - B1) * g
    v *= B2
    v[rows] += (1 - B2) * g * g
    if nesterov:
        var[rows] -= lr_t * ((1 - B1) * g + B1 * m[rows]) / (np.sqrt(v[rows]) + EPS)
    else:
        var -= lr_t * m / (np.sqrt(v) + EPS)


def _numpy_momentum(var, accum, rows, g, nesterov):
    rows = slice(None) if rows is None else rows
    var[rows] -= WD * var[rows]
    accum[rows] = MOMENTUM * accum[rows] + g
    var[rows] -= LR * (g + MOMENTUM * accum[rows]) if nesterov else LR * accum[rows]


def _run(make_optimizer, sparse, resource, decay_var_list=False):
    """Three steps of make_optimizer() on a 4x3 variable; (values after each step, slots, the other variable)."""
    with tf.Graph().as_default():
        var = v1.get_variable("var", initializer=START.astype(np.float32), use_resource=resource)
        other = v1.get_variable("other", initializer=START.astype(np.float32), use_resource=resource)
        if sparse:
            rows = v1.placeholder(tf.int32, [None])
            values = v1.placeholder(tf.float32, [None, 3])
            loss = tf.reduce_sum(values * tf.gather(var, rows)) + tf.reduce_sum(values * tf.gather(other, rows))
        else:
            grad = v1.placeholder(tf.float32, [4, 3])
            loss = tf.reduce_sum(grad * var) + tf.reduce_sum(grad * other)
        optimizer = make_optimizer()
        step = v1.train.get_or_create_global_step()
        kwargs = {"decay_var_list": [var]} if decay_var_list else {}
        train = optimizer.minimize(loss, global_step=step, **kwargs)
        if sparse:
            grads = optimizer.compute_gradients(loss, var_list=[var])
            assert isinstance(grads[0][0], tf.IndexedSlices)
        seen = []
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for t in range(3):
                feed = {rows: ROWS[t], values: ROW_GRADS[t]} if sparse else {grad: DENSE_GRADS[t]}
                sess.run(train, feed)
                seen.append(sess.run(var))
            assert sess.run(step) == 3
            slots = sorted(optimizer.get_slot_names())
            slot_names = sorted(optimizer.get_slot(var, name).op.name for name in slots)
            return seen, slots, slot_names, sess.run(other)


def _feeds(sparse):
    for t in range(3):
        yield (t + 1, *_summed(ROWS[t], ROW_GRADS[t])) if sparse else (t + 1, None, DENSE_GRADS[t])


@pytest.mark.parametrize("resource", [False, True], ids=["ref", "resource"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_nadam_is_adam_with_nesterov_momentum(sparse, resource):
    seen, slots, names, _ = _run(lambda: opt.NadamOptimizer(LR),
                                 sparse, resource)
    var, m, v = START.copy(), np.zeros_like(START), np.zeros_like(START)
    for (t, rows, g), got in zip(_feeds(sparse), seen):
        _numpy_adam(t, var, m, v, rows, g, nesterov=True)
        np.testing.assert_allclose(got, var, rtol=2e-5, atol=1e-6)
    assert slots == ["m", "v"] and names == ["var/Adam", "var/Adam_1"]  # TF 1.15: AdamOptimizer's name
    if sparse:  # rows without a gradient do not move (step 2 touched only row 1)
        np.testing.assert_array_equal(np.delete(seen[1], 1, axis=0), np.delete(seen[0], 1, axis=0))


@pytest.mark.parametrize("resource", [False, True], ids=["ref", "resource"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_adamw_decays_the_weights_before_the_adam_step(sparse, resource):
    seen, slots, names, other = _run(lambda: opt.AdamWOptimizer(WD, learning_rate=LR, beta1=B1, beta2=B2),
                                     sparse, resource, decay_var_list=True)
    var, m, v = START.copy(), np.zeros_like(START), np.zeros_like(START)
    undecayed, m2, v2 = START.copy(), np.zeros_like(START), np.zeros_like(START)
    for (t, rows, g), got in zip(_feeds(sparse), seen):
        _numpy_adam(t, var, m, v, rows, g, decay=WD)
        _numpy_adam(t, undecayed, m2, v2, rows, g)
        np.testing.assert_allclose(got, var, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(other, undecayed, rtol=2e-5, atol=1e-6)  # not in decay_var_list: plain Adam
    assert slots == ["m", "v"] and names == ["var/AdamW", "var/AdamW_1"]


@pytest.mark.parametrize("nesterov", [False, True], ids=["momentum", "nesterov"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_momentumw_decays_the_weights_before_the_momentum_step(sparse, nesterov):
    weight_decay = lambda: tf.constant(WD) * 1.0  # noqa: E731 (a callable or a tensor, as open_seq2seq's wd * lr)
    seen, slots, names, other = _run(lambda: opt.MomentumWOptimizer(weight_decay, LR, MOMENTUM,
                                                                    use_nesterov=nesterov), sparse, resource=True)
    var, accum = START.copy(), np.zeros_like(START)
    for (t, rows, g), got in zip(_feeds(sparse), seen):
        _numpy_momentum(var, accum, rows, g, nesterov)
        np.testing.assert_allclose(got, var, rtol=2e-5, atol=1e-6)
    assert slots == ["momentum"] and names == ["var/MomentumW"]
    assert not np.allclose(other, START)  # no decay_var_list: every variable decays (and moves)


def test_adamw_without_decay_var_list_decays_every_variable():
    seen, _, _, other = _run(lambda: opt.AdamWOptimizer(WD, learning_rate=LR), sparse=False, resource=True)
    var, m, v = START.copy(), np.zeros_like(START), np.zeros_like(START)
    for t, rows, g in _feeds(False):
        _numpy_adam(t, var, m, v, rows, g, decay=WD)
    np.testing.assert_allclose(seen[-1], var, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(other, var, rtol=2e-5, atol=1e-6)


def test_the_classes_are_v1_optimizers_reached_as_tf_contrib_opt():
    from npurun.tf1 import contrib

    for name in ("NadamOptimizer", "AdamWOptimizer", "MomentumWOptimizer", "MovingAverageOptimizer"):
        cls = getattr(opt, name)
        assert issubclass(cls, v1.train.Optimizer) and cls.__module__ == "tensorflow.contrib.opt"
        assert contrib.OPT[name].target == f"npurun.tf1.contrib.opt:{name}"
    assert issubclass(opt.AdamWOptimizer, v1.train.AdamOptimizer)
    assert issubclass(opt.MomentumWOptimizer, v1.train.MomentumOptimizer)


def test_moving_average_optimizer_averages_after_each_step_and_swaps_at_save(tmp_path):
    # (resource variables, the TF1 world's default: this process has TF 2's cond, under which
    # ExponentialMovingAverage cannot initialise its average of a reference variable)
    decay = 0.5
    with tf.Graph().as_default():
        var = v1.get_variable("var", initializer=START.astype(np.float32), use_resource=True)
        grad = v1.placeholder(tf.float32, [4, 3])
        inner = v1.train.MomentumOptimizer(LR, MOMENTUM)
        optimizer = opt.MovingAverageOptimizer(inner, average_decay=decay)
        with pytest.raises(RuntimeError, match="call minimize or apply_gradients first"):
            optimizer.swapping_saver()
        step = v1.train.get_or_create_global_step()
        train = optimizer.minimize(tf.reduce_sum(grad * var), global_step=step)
        average = [v for v in v1.global_variables() if v.op.name == "var/ExponentialMovingAverage"]
        assert len(average) == 1 and optimizer.get_slot_names() == ["momentum"]
        assert optimizer.get_slot(var, "momentum") is inner.get_slot(var, "momentum")
        saver = optimizer.swapping_saver()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            expected, accum, mean = START.copy(), np.zeros_like(START), START.copy()
            for t in range(3):
                sess.run(train, {grad: DENSE_GRADS[t]})
                accum = MOMENTUM * accum + DENSE_GRADS[t]
                expected -= LR * accum
                mean = decay * mean + (1 - decay) * expected  # after the step: the new value is averaged
                np.testing.assert_allclose(sess.run(var), expected, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(sess.run(average[0]), mean, rtol=1e-5, atol=1e-6)
            assert sess.run(step) == 3
            path = saver.save(sess, str(tmp_path / "model.ckpt"))
    reader = v1.train.load_checkpoint(path)
    np.testing.assert_allclose(reader.get_tensor("var"), mean, rtol=1e-5, atol=1e-6)  # the average, as "var"
    np.testing.assert_allclose(reader.get_tensor("var/ExponentialMovingAverage"), expected, rtol=1e-5, atol=1e-6)


def test_moving_average_optimizer_in_parallel_and_with_num_updates():
    with tf.Graph().as_default():
        var = v1.get_variable("var", initializer=START.astype(np.float32), use_resource=True)
        grad = v1.placeholder(tf.float32, [4, 3])
        updates = v1.placeholder(tf.int64, [])
        optimizer = opt.MovingAverageOptimizer(v1.train.GradientDescentOptimizer(LR), average_decay=0.9,
                                               num_updates=updates, sequential_update=False)
        train = optimizer.apply_gradients([(grad, var)])
        average = optimizer._ema.average(var)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train, {grad: DENSE_GRADS[0], updates: 0})
            moved = sess.run(var)
            decay = min(0.9, 1 / 10)  # ExponentialMovingAverage's (1 + num_updates) / (10 + num_updates)
            averaged = sess.run(average)
    np.testing.assert_allclose(moved, START - LR * DENSE_GRADS[0], rtol=1e-5, atol=1e-6)
    # (not sequential: the average may read the variable before or after the step; either is TF 1.15's)
    assert any(np.allclose(averaged, decay * START + (1 - decay) * value, rtol=1e-5, atol=1e-6)
               for value in (START, moved))
    with pytest.raises(TypeError, match="opt must be a tf.compat.v1.train.Optimizer"):
        opt.MovingAverageOptimizer("sgd")
