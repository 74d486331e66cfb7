"""sess.run mode: set_iteration_per_loop, IterationPerLoop, and sessions from an NpuOptimizer ConfigProto."""
import numpy as np
import pytest
import tensorflow as tf

import npurun
from estimator_helpers import FEATURES, CLASSES, make_data
from npurun.config import param_map

v1 = tf.compat.v1
X, Y = make_data()


def build(scale_feed=False):
    """A hand-written sess.run-mode training graph: dataset iterator, Adam, global step."""
    graph = tf.Graph()
    with graph.as_default():
        dataset = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(96, seed=2).repeat().batch(8)
        iterator = v1.data.make_initializable_iterator(dataset)
        features, labels = iterator.get_next()
        scale = v1.placeholder_with_default(1.0, [], name="lr_scale")
        w = v1.get_variable("w", [FEATURES, CLASSES], initializer=v1.glorot_uniform_initializer(seed=1))
        loss = v1.losses.sparse_softmax_cross_entropy(labels, tf.matmul(features, w))
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.AdamOptimizer(0.05 * scale).minimize(loss, global_step=step)
    return graph, iterator, train_op, w, step


def _init(sess, graph, iterator):
    with graph.as_default():
        sess.run([v1.global_variables_initializer(), v1.local_variables_initializer(), iterator.initializer])


def _reference(steps):
    graph, iterator, train_op, w, step = build()
    with v1.Session(graph=graph) as sess:
        _init(sess, graph, iterator)
        for _ in range(steps):
            sess.run(train_op)
        return sess.run(w)


def test_set_iteration_per_loop_runs_n_steps_per_run():
    graph, iterator, train_op, w, step = build()
    with v1.Session(graph=graph) as sess:
        loop = npurun.util.set_iteration_per_loop(sess, train_op, 10)
        _init(sess, graph, iterator)
        sess.run(loop)
        assert sess.run(step) == 10
        sess.run(loop)
        looped = sess.run(w)
    # Same data sequence and updates as 20 single runs: the loop shares the variables and iterator.
    np.testing.assert_array_equal(looped, _reference(20))


def test_iteration_per_loop_variable_changes_between_runs():
    graph, iterator, train_op, w, step = build()
    iteration = npurun.util.IterationPerLoop()
    loop = iteration.create_iteration_per_loop_var(train_op)
    with v1.Session(graph=graph) as sess:
        _init(sess, graph, iterator)
        sess.run(loop)
        assert sess.run(step) == 1  # 1 until loaded
        iteration.load_iteration_per_loop_var(sess, 7)
        sess.run(loop)
        assert sess.run(step) == 8
        iteration.load_iteration_per_loop_var(sess, 2)
        sess.run(loop)
        assert sess.run(step) == 10
    with pytest.raises(ValueError, match="create_iteration_per_loop_var"):
        npurun.util.IterationPerLoop().load_iteration_per_loop_var(None, 3)


def test_feeds_reach_every_iteration():
    graph, iterator, train_op, w, step = build()
    with v1.Session(graph=graph) as sess:
        loop = npurun.util.set_iteration_per_loop(sess, train_op, 5)
        _init(sess, graph, iterator)
        before = sess.run(w)
        sess.run(loop, feed_dict={graph.get_tensor_by_name("lr_scale:0"): 0.0})
        np.testing.assert_array_equal(sess.run(w), before)  # learning rate 0 in all 5 iterations
        assert sess.run(step) == 5


def test_argument_rules():
    graph, iterator, train_op, w, step = build()
    with v1.Session(graph=graph) as sess:
        with pytest.raises(ValueError, match="iterations_per_loop: got 0"):
            npurun.util.set_iteration_per_loop(sess, train_op, 0)
        with pytest.raises(TypeError, match="iterations_per_loop"):
            npurun.util.set_iteration_per_loop(sess, train_op, 2.5)
    with v1.Session(graph=tf.Graph()) as other:
        with pytest.raises(ValueError, match="graph"):
            npurun.util.set_iteration_per_loop(other, train_op, 2)


def test_session_from_an_npu_optimizer_config_proto():
    proto = v1.ConfigProto()
    param_map.add_npu_optimizer(proto, {"iterations_per_loop": 4, "op_wait_timeout": 3})
    graph, iterator, train_op, w, step = build()
    sess = npurun.util.session(proto, graph=graph)
    try:
        assert sess.npurun_config.iterations_per_loop == 4
        # The options took effect in the session's ConfigProto, and the NpuOptimizer entry is gone.
        assert sess.plan.config_proto.operation_timeout_in_ms == 3000
        assert param_map.find_npu_optimizer(sess.plan.config_proto) is None
        with pytest.raises(ValueError, match="says 4.*given 3"):
            npurun.util.set_iteration_per_loop(sess, train_op, 3)
        loop = npurun.util.set_iteration_per_loop(sess, train_op, 4)
        _init(sess, graph, iterator)
        sess.run(loop)
        assert sess.run(step) == 4
    finally:
        sess.close()
    bad = v1.ConfigProto()
    param_map.add_npu_optimizer(bad, {"iterations_per_loop": 4})
    bad.graph_options.rewrite_options.custom_optimizers[0].parameter_map["iterations_per_loop"].i = 0
    with pytest.raises(ValueError, match="iterations_per_loop"):
        npurun.util.session(bad, graph=build()[0])
