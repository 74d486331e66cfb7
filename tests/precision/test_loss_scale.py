"""Loss scaling observed on running graphs: skipped steps, scale changes, bounds, device loop."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

from npurun.precision import (ExponentialUpdateLossScaleManager, FixedLossScaleManager, LossScaleLoggingHook,
                              NPULossScaleOptimizer, NPUOptimizer, check_tailing_optimization)
from npurun.precision.loss_scale import FLOAT32_MAX

v1 = tf.compat.v1


class Step:
    """A graph with weights w, a loss sum(w*w)*poison (poison fed inf to overflow), one train op."""

    def __init__(self, manager_factory, optimizer="adam", loop_iterations=None, wrap=NPULossScaleOptimizer,
                 loss_scale_factor=1.0):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.w = v1.get_variable("w", initializer=tf.constant([1.0, -2.0, 3.0]))
            self.global_step = v1.train.get_or_create_global_step()
            self.poison = v1.placeholder_with_default(tf.constant(1.0), [])
            self.manager = manager_factory()
            inner = (v1.train.AdamOptimizer(0.1) if optimizer == "adam"
                     else v1.train.MomentumOptimizer(0.1, 0.9))
            self.optimizer = wrap(inner, self.manager)

            def train_op():
                loss = tf.reduce_sum(self.w * self.w) * self.poison * loss_scale_factor
                return self.optimizer.minimize(loss, global_step=self.global_step)

            if loop_iterations is None:
                self.train = train_op()
            else:
                def body(i):
                    with tf.control_dependencies([train_op()]):
                        return i + 1
                self.train = tf.while_loop(lambda i: i < loop_iterations, body, [tf.constant(0)])
            self.scale = self.manager.loss_scale_variable
            self.skipped = self.manager.skipped_steps_variable
            self.all_variables = v1.global_variables()
            init = v1.global_variables_initializer()
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def run(self, overflow=False):
        self.session.run(self.train, {self.poison: np.inf} if overflow else None)

    def state(self):
        scale, skipped, step = self.session.run([self.scale, self.skipped, self.global_step])
        return float(scale), int(skipped), int(step)

    def snapshot(self):
        """Every variable's bytes, except the loss-scale bookkeeping."""
        own = {self.scale.name, self.skipped.name}
        return {v.name: self.session.run(v).tobytes() for v in self.all_variables
                if v.name not in own and "loss_scale" not in v.name}


def test_overflowing_step_changes_no_variable_and_lowers_the_scale():
    step = Step(lambda: ExponentialUpdateLossScaleManager(1024, 1000, decr_every_n_nan_or_inf=2))
    step.run()
    step.run()
    assert step.state() == (1024.0, 0, 2)
    before = step.snapshot()
    step.run(overflow=True)
    # Bit for bit: weights, Adam slots and beta powers, global_step (the Ascend adapter keeps
    # global_step inside the skipped update).
    assert step.snapshot() == before
    assert step.state() == (1024.0, 1, 2)  # first overflow: counted, scale kept (decr_every_n_nan_or_inf=2)
    step.run(overflow=True)
    assert step.snapshot() == before
    assert step.state() == (pytest.approx(1024 * 0.8), 2, 2)
    step.run()
    assert step.snapshot() != before
    assert step.state()[1:] == (2, 3)


def test_overflow_count_need_not_be_consecutive_and_growth_needs_consecutive_good_steps():
    step = Step(lambda: ExponentialUpdateLossScaleManager(8, 3, decr_every_n_nan_or_inf=2, incr_ratio=2))
    step.run(overflow=True)
    step.run()
    step.run()
    assert step.state()[0] == 8  # an overflow resets the good-step count: 2 good steps so far
    step.run(overflow=True)  # second overflow in total -> shrink
    assert step.state()[0] == pytest.approx(8 * 0.8)
    for _ in range(3):
        step.run()
    assert step.state()[0] == pytest.approx(8 * 0.8 * 2)


def test_scale_grows_after_n_good_steps():
    step = Step(lambda: ExponentialUpdateLossScaleManager(4, 3, incr_ratio=2))
    for expected in (4, 4, 8, 8, 8, 16):
        step.run()
        assert step.state()[0] == expected


def test_scale_never_drops_below_one():
    step = Step(lambda: ExponentialUpdateLossScaleManager(2, 100, decr_every_n_nan_or_inf=1, decr_ratio=0.5))
    for expected in (1.0, 1.0, 1.0):
        step.run(overflow=True)
        assert step.state()[0] == expected
    assert step.state()[1] == 3


def test_scale_never_grows_past_float32_max():
    # A tiny loss keeps loss * scale finite even at the largest scales.
    step = Step(lambda: ExponentialUpdateLossScaleManager(2.0 ** 126, 1, incr_ratio=2), loss_scale_factor=1e-39)
    step.run()
    assert step.state()[0] == 2.0 ** 127
    step.run()  # 2**128 is not a float32: the scale stays
    assert step.state()[0] == 2.0 ** 127
    top = Step(lambda: ExponentialUpdateLossScaleManager(FLOAT32_MAX, 1, incr_ratio=1.5), loss_scale_factor=1e-39)
    top.run()
    assert np.float32(top.state()[0]) == np.float32(FLOAT32_MAX)


def test_fixed_scale_skips_overflows_but_never_changes():
    step = Step(lambda: FixedLossScaleManager(256), optimizer="momentum")
    before = step.snapshot()
    step.run(overflow=True)
    assert step.snapshot() == before  # momentum slots untouched too
    assert step.state() == (256.0, 1, 0)
    step.run()
    assert step.state() == (256.0, 1, 1)


def test_fixed_scale_without_overflow_check_applies_every_step():
    step = Step(lambda: FixedLossScaleManager(16, enable_overflow_check=False))
    step.run(overflow=True)
    assert np.isnan(step.session.run(step.w)).all()
    assert step.state() == (16.0, 0, 1)


def test_gradients_are_unscaled():
    # With a huge fixed scale the applied update equals the unscaled one (plain SGD on sum(w*w)).
    graph = tf.Graph()
    with graph.as_default():
        w = v1.get_variable("w", initializer=tf.constant([1.0, -2.0]))
        opt = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(0.25), FixedLossScaleManager(2.0 ** 20))
        train = opt.minimize(tf.reduce_sum(w * w))
        init = v1.global_variables_initializer()
    with v1.Session(graph=graph) as session:
        session.run(init)
        session.run(train)
        np.testing.assert_array_equal(session.run(w), [0.5, -1.0])


@pytest.mark.parametrize("control_flow_v2", [True, False])
def test_device_loop_skips_overflowing_iterations(control_flow_v2):
    previous = v1.control_flow_v2_enabled()
    if control_flow_v2:
        v1.enable_control_flow_v2()
    else:
        v1.disable_control_flow_v2()
    try:
        step = Step(lambda: ExponentialUpdateLossScaleManager(8, 2, decr_every_n_nan_or_inf=1), loop_iterations=3)
        step.run()
        assert step.state() == (16.0, 0, 3)  # 3 good iterations: grown once after 2
        before = step.snapshot()
        step.run(overflow=True)
        assert step.snapshot() == before
        assert step.state() == (pytest.approx(16 * 0.8 ** 3), 3, 3)
    finally:
        (v1.enable_control_flow_v2 if previous else v1.disable_control_flow_v2)()


def test_scale_and_skipped_steps_are_summarised_and_logged(caplog):
    step = Step(lambda: ExponentialUpdateLossScaleManager(64, 100))
    with step.graph.as_default():
        merged = v1.summary.merge_all()
        hook = LossScaleLoggingHook(every_n_runs=2)
        session = v1.train.MonitoredSession(
            session_creator=v1.train.ChiefSessionCreator(), hooks=[hook])
    with caplog.at_level(logging.INFO, logger="npurun"):
        session.run(step.train)
        session.run(step.train, {step.poison: np.inf})
        session.run(step.train)
        summary = tf.compat.v1.Summary.FromString(session.run(merged))
    session.close()
    assert {value.tag: value.simple_value for value in summary.value} == {
        "loss_scale": 64.0, "loss_scale_skipped_steps": 1.0}
    messages = [record.getMessage() for record in caplog.records if record.name == "npurun"]
    assert any("1 step(s) skipped" in m and "1 skipped in total" in m for m in messages), messages


def test_npu_optimizer_without_loss_scale_only_delegates():
    graph = tf.Graph()
    with graph.as_default():
        w = v1.get_variable("w", initializer=tf.constant([1.0]))
        opt = NPUOptimizer(v1.train.GradientDescentOptimizer(0.5), is_tailing_optimization=True)
        train = opt.minimize(tf.reduce_sum(w * w))
        init = v1.global_variables_initializer()
    with v1.Session(graph=graph) as session:
        session.run(init)
        session.run(train)
        assert session.run(w)[0] == 0.0
    assert not [v for v in graph.get_collection(v1.GraphKeys.GLOBAL_VARIABLES) if "loss_scale" in v.name]
    check_tailing_optimization(graph, True)
    with pytest.raises(ValueError, match="is_tailing_optimization"):
        check_tailing_optimization(graph, False)


def test_npu_optimizer_with_loss_scale_skips_overflows():
    step = Step(lambda: ExponentialUpdateLossScaleManager(32, 10),
                wrap=lambda opt, manager: NPUOptimizer(opt, manager, is_loss_scale=True))
    before = step.snapshot()
    step.run(overflow=True)
    assert step.snapshot() == before and step.state()[1] == 1


def test_constructor_rules():
    with pytest.raises(ValueError, match="loss_scale"):
        FixedLossScaleManager(0.5)
    with pytest.raises(ValueError, match="init_loss_scale"):
        ExponentialUpdateLossScaleManager(0.5, 10)
    with pytest.raises(ValueError, match="incr_every_n_steps"):
        ExponentialUpdateLossScaleManager(2, 0)
    with pytest.raises(ValueError, match="decr_ratio"):
        ExponentialUpdateLossScaleManager(2, 10, decr_ratio=1.5)
    with pytest.raises(ValueError, match="is_loss_scale=True needs a loss_scale_manager"):
        NPUOptimizer(v1.train.GradientDescentOptimizer(0.1), is_loss_scale=True)
    with pytest.raises(TypeError, match="tf.compat.v1.train.Optimizer"):
        NPULossScaleOptimizer(object(), FixedLossScaleManager(2))
    with pytest.warns(UserWarning, match="is_loss_scale=False"):
        NPUOptimizer(v1.train.GradientDescentOptimizer(0.1), FixedLossScaleManager(2))
