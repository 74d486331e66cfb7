"""tf.compat.v1.Session under the compat layer: an NpuOptimizer entry gives npurun.util's NPUSession."""
import pytest
import tensorflow as tf
from tensorflow.python.client import session as tf_session

v1 = tf.compat.v1


def _npu_config(**entries):
    config = v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    for key, (field, value) in entries.items():
        setattr(custom_op.parameter_map[key], field, value)
    return config


def test_bad_option_value_fails_when_the_session_is_created(active):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="precision_mode"):
            v1.Session(config=_npu_config(precision_mode=("s", b"fastest_please")))


def test_entry_gives_an_npusession_with_the_options(active):
    from npurun.util import NPUSession

    with tf.Graph().as_default():
        x = tf.constant(2.0) * 3.0
        with v1.Session(config=_npu_config(op_wait_timeout=("i", 7), use_off_line=("b", True))) as sess:
            assert isinstance(sess, NPUSession) and isinstance(sess, v1.Session)
            assert sess.npurun_config.op_wait_timeout == 7 and sess.run(x) == 6.0
            proto = sess.plan.config_proto
            assert proto.operation_timeout_in_ms == 7000
            assert all(c.name != "NpuOptimizer" for c in proto.graph_options.rewrite_options.custom_optimizers)


def test_graph_run_mode_zero_gives_an_inference_session(active, monkeypatch):
    from npurun import util

    modes = []
    original = util.NPUSession.__init__

    def record(self, npurun_config, target="", graph=None, mode="train"):
        modes.append(mode)
        original(self, npurun_config, target=target, graph=graph, mode=mode)

    monkeypatch.setattr(util.NPUSession, "__init__", record)
    with tf.Graph().as_default():
        v1.Session(config=_npu_config(graph_run_mode=("i", 0))).close()
        v1.Session(config=_npu_config()).close()
    assert modes == ["infer", "train"]


def test_option_without_effect_here_warns(active):
    with tf.Graph().as_default():
        with pytest.warns(UserWarning, match="enable_small_channel"):
            v1.Session(config=_npu_config(enable_small_channel=("i", 1))).close()


def test_config_without_npu_entry_gives_tensorflows_session(active):
    with tf.Graph().as_default():
        with v1.Session(config=v1.ConfigProto(inter_op_parallelism_threads=2)) as sess:
            assert type(sess) is tf_session.Session and sess.run(tf.constant(1)) == 1
        with v1.Session() as sess:
            assert type(sess) is tf_session.Session
    assert isinstance(sess, v1.Session) and issubclass(tf_session.Session, v1.Session)


def test_set_iteration_per_loop_sees_the_entrys_iterations(active):
    from npu_bridge.estimator.npu import util

    with tf.Graph().as_default():
        step = v1.train.get_or_create_global_step()
        train_op = v1.assign_add(step, 1).op
        with v1.Session(config=_npu_config(iterations_per_loop=("i", 4))) as sess:
            sess.run(v1.global_variables_initializer())
            with pytest.raises(ValueError, match="iterations_per_loop"):
                util.set_iteration_per_loop(sess, train_op, 3)
            looped = util.set_iteration_per_loop(sess, train_op, 4)
            sess.run(looped)
            assert sess.run(step) == 4
