"""jit_compile and mix_compile_mode: what XLA compiles, observed in the executed graphs."""
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


def looped_step(iterations):
    def build(opts):
        xs, ys = batch(n=16 * iterations * 2)
        dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(16, drop_remainder=True).repeat()
        assert compilation.loop_is_compiled(opts)
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
