"""npu_init helpers, util helpers, npu_scope and the output hook, implemented in npurun.adapter.shims."""

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2

import npurun
from npurun.adapter import shims
from npurun.tf_estimator import RunConfig
from npurun.config import param_map

v1 = tf.compat.v1


def test_npu_config_proto_and_session_config_init():
    proto = shims.npu_config_proto()
    assert isinstance(proto, config_pb2.ConfigProto) and proto.allow_soft_placement
    given = config_pb2.ConfigProto(log_device_placement=True)
    assert shims.npu_config_proto(given) is given and not given.log_device_placement
    # As the adapter's: an NpuOptimizer entry, added once, and a hand-written one is kept as it is.
    assert param_map.find_npu_optimizer(proto) is not None
    shims.npu_config_proto(proto)
    assert [c.name for c in proto.graph_options.rewrite_options.custom_optimizers].count("NpuOptimizer") == 1
    hand = config_pb2.ConfigProto()
    param_map.add_npu_optimizer(hand, {"iterations_per_loop": 10})
    assert npurun.NPURunConfig(session_config=shims.npu_config_proto(hand)).iterations_per_loop == 10

    session_config = shims.npu_session_config_init()
    shims.npu_session_config_init(session_config)
    entries = [c for c in session_config.graph_options.rewrite_options.custom_optimizers if c.name == "NpuOptimizer"]
    assert len(entries) == 1  # added once
    assert npurun.NPURunConfig(session_config=session_config).iterations_per_loop == 1


def test_npu_run_config_init_keeps_the_config_and_adds_the_session_config():
    fresh = shims.npu_run_config_init()
    assert isinstance(fresh, RunConfig) and param_map.find_npu_optimizer(fresh.session_config) is not None
    given = npurun.NPURunConfig(keep_checkpoint_max=2)
    updated = shims.npu_run_config_init(given)
    assert updated.keep_checkpoint_max == 2 and param_map.find_npu_optimizer(updated.session_config) is not None


def test_global_dict_and_npu_rank_getters():
    shims.global_dict_init()
    assert (shims.get_npu_rank_id(), shims.get_npu_local_rank_id(), shims.get_npu_rank_size()) == (0, 0, 1)
    shims.set_value("npu_rank_size", 8)
    assert shims.get_npu_rank_size() == 8 and shims.get_value("missing", "d") == "d"
    shims.global_dict_init()


def test_variable_initializer_in_host_and_npu_compile():
    with tf.Graph().as_default():
        a, b = v1.Variable(1.0), v1.Variable(2.0)
        init = shims.variable_initializer_in_host([a])
        assert init.name == "var_in_host"
        with v1.Session() as sess:
            shims.npu_compile(sess, init)
            assert sess.run(a) == 1.0
            assert not sess.run(v1.is_variable_initialized(b))


def test_without_npu_compile_scope_runs_the_block():
    with shims.without_npu_compile_scope():
        ran = True
    assert ran


def test_output_tensor_hook_calls_output_fn_every_n_steps_and_at_end():
    calls = []
    with tf.Graph().as_default():
        step = v1.train.get_or_create_global_step()
        increment = v1.assign_add(step, 1)
        hook = shims.NPUOutputTensorHook({"step": step}, dependencies=[increment], output_fn=calls.append,
                                         output_every_n_steps=2)
        with v1.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run(increment.op)
    assert [[d["step"] for d in call] for call in calls] == [[1, 2], [3, 4], [5]]
    with pytest.raises(ValueError, match="output_every_n_steps"):
        shims.NPUOutputTensorHook(None, output_every_n_steps=-1)


def test_split_strategy_validates():
    shims.set_split_strategy_by_size([60, 20, 20])
    with pytest.raises(ValueError, match="set_split_strategy_by_size"):
        shims.set_split_strategy_by_size(None)


def test_graph_and_optimizer_options_are_returned_unchanged():
    options = config_pb2.GraphOptions(build_cost_model=3)
    assert shims.npu_graph_options(options) is options
    assert isinstance(shims.npu_optimizer_options(), config_pb2.OptimizerOptions)


def test_npu_init_optimizer_helpers_and_plain_hooks():
    with tf.Graph().as_default():
        opt = v1.train.GradientDescentOptimizer(0.1)
        wrapped = shims.npu_tf_optimizer(opt)
        assert isinstance(wrapped, npurun.distribute.NPUDistributedOptimizer)
        assert shims.npu_keras_optimizer(opt) is opt  # one rank: nothing to average
        for name in ("NpuEmptyHook", "SetIterationsVarHook"):
            assert issubclass(getattr(shims, name), v1.train.SessionRunHook)
        with pytest.raises(ValueError, match="one of step or loss"):
            shims.TellMeStepOrLossHook()
        loss = tf.constant(1.0)
        assert shims.set_graph_exec_config(loss, dynamic_input=True) is loss
        with shims.graph_engine_scope("stage", 1):
            inside = tf.constant(2.0)
        with v1.Session() as sess:
            assert sess.run(inside) == 2.0
    assert shims.experimental_options["constant_folding"] == 1 and not shims.experimental_options[
        "disable_model_pruning"]


def test_npu_variable_scope_with_a_placement_runs_the_block_as_written(active):
    import warnings

    from npu_bridge.estimator.npu.npu_scope import NpuExecutePlacement, npu_variable_scope

    with tf.Graph().as_default():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with npu_variable_scope(placement=NpuExecutePlacement.HOST):
                w = v1.get_variable("w", initializer=tf.constant([3.0]))
        assert any("accepted, no effect here" in str(c.message) for c in caught)
        with v1.Session() as sess:
            sess.run(w.initializer)
            assert sess.run(w)[0] == 3.0


class _SumCell:
    """A minimal RNN cell (what static_rnn asks of one): state = tanh(state + x @ w)."""

    state_size = output_size = 2

    def __init__(self, w):
        self.w = w

    def zero_state(self, batch_size, dtype):
        return tf.zeros([batch_size, 2], dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return self.zero_state(batch_size, dtype)

    def __call__(self, x, state, scope=None):
        new = tf.tanh(state + tf.matmul(x, self.w))
        return new, new


def test_npu_dynamic_rnn_is_the_cell_over_time_major_inputs():
    import numpy as np

    rng = np.random.RandomState(0)
    inputs = rng.rand(5, 3, 4).astype(np.float32)  # [time, batch, features]
    w = rng.rand(4, 2).astype(np.float32)
    with tf.Graph().as_default():
        outputs, state = shims.npu_dynamic_rnn(_SumCell(tf.constant(w)), tf.constant(inputs), dtype=tf.float32)
        with v1.Session() as sess:
            got, got_state = sess.run([outputs, state])
    expected, h = [], np.zeros((3, 2), np.float32)
    for x in inputs:
        h = np.tanh(h + x @ w)
        expected.append(h)
    np.testing.assert_allclose(got, np.stack(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state, h, rtol=1e-5, atol=1e-6)


def test_npu_close_at_the_end_of_a_script_warns_of_nothing(recwarn):
    import npurun.compat as compat

    with compat.active():
        from npu_bridge.npu_init import npu_close
        from npu_bridge.estimator.npu import npu_plugin

        npu_close()
        npu_plugin.npu_resource_shutdown()
    assert [str(w.message) for w in recwarn if "npu_close" in str(w.message) or "shutdown" in str(w.message)] == []
