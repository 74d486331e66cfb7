"""jit_compile and mix_compile_mode: what XLA compiles, observed in the executed graphs."""
import warnings

import numpy as np
import pytest
import tensorflow as tf

from helpers import XLA_OPS, Built, batch, mlp_step, options, placeholder_step, session_for, v1
from npurun.runtime import compilation
from op_names import MATMUL


def test_auto_compiles_on_gpu_and_not_on_cpu():
    auto = options()
    assert compilation.resolve_jit(auto, gpu=False).mode == "off"
    assert compilation.resolve_jit(auto, gpu=True).mode == "whole"
    assert compilation.resolve_jit(options(mix_compile_mode=True), gpu=True).mode == "mixed"
    assert compilation.resolve_jit(options(jit_compile="false"), gpu=True).mode == "off"
    assert compilation.resolve_jit(options(jit_compile="true"), gpu=False).device_type == "XLA_CPU_JIT"


def test_default_on_cpu_runs_no_xla(both_onednn):
    ops = set(both_onednn.value("runtime:default"))  # options(), the placeholder MLP (probes.py)
    assert not ops & XLA_OPS
    assert ops & MATMUL  # the model ran in TensorFlow's (or oneDNN's) kernels


def test_whole_step_is_one_xla_computation_and_trains_like_tensorflow():
    with session_for(options(jit_compile="false"), placeholder_step) as plain:
        plain_losses = [plain.run()[0] for _ in range(3)]
    with session_for(options(jit_compile="true"), placeholder_step) as built:
        losses, ops = zip(*(built.run() for _ in range(3)))
        step = built.session.run(v1.train.get_global_step(built.graph))
    assert ops[-1] & XLA_OPS == {"XlaLaunch"}
    # nothing of the model runs outside the compiled computation
    assert not ops[-1] & (MATMUL | {"BiasAdd", "Relu", "ResourceApplyGradientDescent"})
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-4)
    assert step == 3


def test_device_loop_rule_compiles_the_step_on_a_cpu_and_the_loop_on_a_gpu():
    xla = options(jit_compile="true", iterations_per_loop=4)
    assert compilation.loop_compilation(xla, gpu=False, environ={}) == "step"
    assert compilation.loop_compilation(xla, gpu=True, environ={}) == "loop"
    for gpu in (False, True):
        assert compilation.loop_compilation(xla, gpu=gpu, environ={"NPURUN_XLA_DEVICE_LOOP": "loop"}) == "loop"
        assert compilation.loop_compilation(xla, gpu=gpu, environ={"NPURUN_XLA_DEVICE_LOOP": "Step"}) == "step"
        # auto stays off on a CPU, mixed mode clusters: nothing for the loop rule to choose
        assert compilation.loop_compilation(options(iterations_per_loop=4), gpu=False, environ={}) == "none"
        assert compilation.loop_compilation(options(jit_compile="false"), gpu=gpu, environ={}) == "none"
    # dynamic_execute pads a ranged input outside the computation: the stacked input of a whole loop
    ranged = options(jit_compile="true", iterations_per_loop=4, dynamic_input=True,
                     dynamic_inputs_shape_range="getnext:[2~64,8],[2~64]")
    assert compilation.loop_compilation(ranged, gpu=False, environ={}) == "loop"
    assert compilation.loop_compilation(ranged, gpu=False, environ={"NPURUN_XLA_DEVICE_LOOP": "step"}) == "step"
    with pytest.raises(ValueError, match=r"NPURUN_XLA_DEVICE_LOOP='whole' is not understood: set it to 'step'"):
        compilation.loop_compilation(xla, gpu=False, environ={"NPURUN_XLA_DEVICE_LOOP": "whole"})


def conv_step(images, labels):
    kernel = v1.get_variable("k", [3, 3, 2, 4], initializer=v1.glorot_uniform_initializer(seed=1))
    hidden = tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME"))
    kernel2 = v1.get_variable("k2", [3, 3, 4, 4], initializer=v1.glorot_uniform_initializer(seed=2))
    logits = tf.reduce_mean(tf.nn.conv2d(hidden, kernel2, 1, "SAME"), [1, 2])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    with tf.control_dependencies([v1.train.GradientDescentOptimizer(0.1).minimize(loss)]):
        return tf.identity(loss)


def _build_conv(loop_in_computation):
    """compile_step of a 2-iteration device loop of conv_step (the loop inside the computation) or
    of each iteration's step (inside a tf.while_loop); graph built only, nothing runs."""
    opts = options(jit_compile="true", iterations_per_loop=2)
    graph = tf.Graph()
    with graph.as_default(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        images = tf.zeros([2, 4, 8, 8, 2])
        labels = tf.zeros([2, 4], tf.int32)
        if loop_in_computation:
            compilation.compile_step(
                opts, lambda s: compilation.device_loop(lambda e: conv_step(*e), 2, s), [(images, labels)])
        else:
            def step(k):
                with tf.control_dependencies([conv_step(images[k], labels[k])]):
                    return k + 1

            def body(i):
                return compilation.compile_step(opts, step, [i])
            tf.while_loop(lambda i: i < 2, body, [tf.constant(0)])
    return [w for w in caught if issubclass(w.category, compilation.XlaLoopCostWarning)]


def test_a_cpu_xla_loop_over_convolution_gradients_warns_with_the_cost():
    found = _build_conv(loop_in_computation=True)
    assert len(found) == 1
    message = str(found[0].message)
    # two convolutions, each with its filter and input gradients (TensorFlow builds both)
    assert "4 convolution gradient op(s) inside a loop on the CPU" in message
    assert f"measured {compilation.CPU_CONV_LOOP_SLOWDOWN:.0f}x slower per step than compiling each step" in message
    assert "NPURUN_XLA_DEVICE_LOOP" in message and "jit_compile='false'" in message


def test_a_compiled_step_inside_a_loop_and_a_dense_loop_do_not_warn():
    assert _build_conv(loop_in_computation=False) == []
    graph = tf.Graph()
    with graph.as_default(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xs, ys = batch(n=32)
        stacked = (tf.reshape(xs, [2, 16, 8]), tf.reshape(ys, [2, 16]))
        compilation.compile_step(options(jit_compile="true", iterations_per_loop=2),
                                 lambda s: compilation.device_loop(lambda e: mlp_step(*e), 2, s), [stacked])
    assert not [w for w in caught if issubclass(w.category, compilation.XlaLoopCostWarning)]
    # the GPU backend has no such cost: no warning for its device type
    assert not compilation.warn_loop_cost(graph, graph.get_operations(), "XLA_GPU_JIT")


def looped_step(iterations):
    def build(opts):
        xs, ys = batch(n=16 * iterations * 2)
        dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(16, drop_remainder=True).repeat()
        iterator = v1.data.make_initializable_iterator(compilation.stack_for_loop(dataset, iterations))
        stacked = iterator.get_next()
        losses = compilation.compile_step(
            opts, lambda s: compilation.device_loop(lambda e: mlp_step(*e), iterations, s), [stacked])
        return losses, {}, [iterator.initializer]
    return build


def test_whole_device_loop_is_one_xla_computation():
    with session_for(options(jit_compile="true", iterations_per_loop=4), looped_step(4)) as built:
        losses, ops = built.run()
        losses2, _ = built.run()
        step = built.session.run(v1.train.get_global_step(built.graph))
    assert losses.shape == (4,) and np.all(np.isfinite(losses))
    assert "XlaLaunch" in ops
    # the loop itself is inside the computation: no executor control flow, no model op outside
    assert not ops & ({"Enter", "Exit", "NextIteration", "LoopCond", "While", "StatelessWhile"} | MATMUL)
    assert step == 8

    def first_batch(opts):
        xs, ys = batch(n=16 * 4 * 2)
        return mlp_step(tf.constant(xs[:16]), tf.constant(ys[:16])), {}, []

    with session_for(options(jit_compile="false"), first_batch) as plain:
        first_loss, _ = plain.run()
    # the loop's first iteration computed what TensorFlow computes for the first batch
    np.testing.assert_allclose(losses[0], first_loss, rtol=1e-4)
    assert not np.allclose(losses, losses2)


def string_roundtrip_step(features, labels):
    # AsString / StringToNumber have no XLA kernel: the op the checks must name.
    rounded = tf.strings.to_number(tf.strings.as_string(features, precision=3))
    return mlp_step(rounded, labels)


def string_step(opts):
    x = v1.placeholder(tf.float32, [None, 8], name="x")
    y = v1.placeholder(tf.int32, [None], name="y")
    loss = compilation.compile_step(opts, string_roundtrip_step, [x, y])
    xs, ys = batch()
    return loss, {x: xs, y: ys}, []


def test_full_sink_names_the_op_xla_cannot_compile():
    with pytest.raises(ValueError) as caught:
        with session_for(options(jit_compile="true"), string_step):
            pass
    message = str(caught.value)
    assert "mix_compile_mode=False" in message and "XLA_CPU_JIT" in message
    assert "AsString" in message and "StringToNumber" in message
    assert "XLA has no kernel" in message


def test_mixed_mode_compiles_clusters_and_runs_the_rest_in_tensorflow():
    with session_for(options(jit_compile="true", mix_compile_mode=True), string_step) as built:
        loss, ops = built.run()
    assert {"_XlaCompile", "_XlaRun"} <= ops
    assert {"AsString", "StringToNumber"} <= ops  # left to the TensorFlow executor
    assert np.isfinite(loss)


def test_jit_false_never_compiles_even_with_mixed_mode():
    with session_for(options(jit_compile="false", mix_compile_mode=True), string_step) as built:
        _, ops = built.run()
    assert not ops & XLA_OPS


def test_whole_mode_warns_when_the_step_was_not_built_through_compile_step():
    def plain(opts):
        x, y = batch()
        return mlp_step(tf.constant(x), tf.constant(y)), {}, []

    with pytest.warns(UserWarning, match="compile_step"):
        with session_for(options(jit_compile="true"), plain) as built:
            _, ops = built.run()
    assert not ops & XLA_OPS
