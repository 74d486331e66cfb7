"""set_iteration_per_loop: what a sess.run of the loop op *and* other tensors gives, as on Ascend.

A run consumes exactly N input elements; a fetched tensor computed from the input (the loss, as
scripts fetch it) is the last iteration's value; one that only reads state (the global step) is
read after the loop.
"""
import numpy as np
import tensorflow as tf

import npurun

v1 = tf.compat.v1
N = 3


def build():
    """Input: batches numbered 0, 1, 2, ...; each step adds its batch number to `total`."""
    graph = tf.Graph()
    with graph.as_default():
        iterator = v1.data.make_initializable_iterator(tf.data.Dataset.range(1000).map(lambda k: tf.cast(k, tf.float32)))
        batch = iterator.get_next()
        total = v1.get_variable("total", [], initializer=v1.zeros_initializer())
        step = v1.train.get_or_create_global_step()
        loss = tf.identity(batch * 10.0 + total, name="loss")  # uses the variable before this step's update ...
        with tf.control_dependencies([loss]):  # ... because the update waits for it, as a gradient step does
            train_op = tf.group(total.assign_add(batch), step.assign_add(1))
        init = [v1.global_variables_initializer(), v1.local_variables_initializer(), iterator.initializer]
    return graph, init, batch, total, step, loss, train_op


def test_loss_fetched_next_to_the_loop_is_the_last_iterations_and_a_run_consumes_n_batches():
    graph, init, batch, total, step, loss, train_op = build()
    with v1.Session(graph=graph) as sess:
        loop = npurun.util.set_iteration_per_loop(sess, train_op, N)
        sess.run(init)
        fetched = [sess.run([loop, batch, loss, step]) for _ in range(2)]
        total_after = sess.run(total)
    # Run 1 trains on batches 0, 1, 2 and run 2 on 3, 4, 5: nothing else is read from the input.
    assert total_after == sum(range(2 * N))
    (_, batch1, loss1, step1), (_, batch2, loss2, step2) = fetched
    assert (batch1, batch2) == (2.0, 5.0)  # the last iteration's batch
    assert loss1 == 2 * 10 + (0 + 1)  # computed in that iteration, before its update
    assert loss2 == 5 * 10 + (0 + 1 + 2 + 3 + 4)
    assert (step1, step2) == (N, 2 * N)  # read after the loop


def test_dict_fetches_and_a_run_of_the_loop_alone():
    graph, init, batch, total, step, loss, train_op = build()
    with v1.Session(graph=graph) as sess:
        loop = npurun.util.set_iteration_per_loop(sess, train_op, N)
        sess.run(init)
        sess.run(loop)
        result = sess.run({"train": loop, "values": (batch, loss)})
        assert result["train"] is None and result["values"][0] == 5.0
        assert sess.run(total) == sum(range(2 * N))
        np.testing.assert_equal(sess.run(batch), 6.0)  # the input alone, outside the loop: the next element


def test_iteration_per_loop_variable_and_an_npu_session():
    from npurun.config import param_map

    graph, init, batch, total, step, loss, train_op = build()
    iteration = npurun.util.IterationPerLoop()
    loop = iteration.create_iteration_per_loop_var(train_op)
    proto = v1.ConfigProto()
    param_map.add_npu_optimizer(proto, {})
    sess = npurun.util.session(proto, graph=graph)
    with graph.as_default():
        init = init + [v1.local_variables_initializer()]  # now with the loop's count variable
    try:
        sess.run(init)
        iteration.load_iteration_per_loop_var(sess, 4)
        _, last = sess.run([loop, batch])
        assert last == 3.0 and sess.run(total) == 0 + 1 + 2 + 3
    finally:
        sess.close()
