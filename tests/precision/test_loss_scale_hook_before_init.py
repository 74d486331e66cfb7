"""The loss-scale logging hook in a sess.run-mode session: runs before the variable initializer work."""
from __future__ import annotations

import logging

import numpy as np
import tensorflow as tf

import npurun
from npurun.config import param_map
from npurun.precision import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer

v1 = tf.compat.v1


def _npu_config():
    config = v1.ConfigProto()
    param_map.add_npu_optimizer(config, {})
    return config


def test_runs_before_the_initializer_do_not_read_the_loss_scale_variables(caplog):
    graph = tf.Graph()
    with graph.as_default():
        w = v1.get_variable("w", initializer=tf.constant([1.0, -2.0]))
        poison = v1.placeholder_with_default(tf.constant(1.0), [])
        manager = ExponentialUpdateLossScaleManager(init_loss_scale=32, incr_every_n_steps=1000)
        train = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(0.1), manager).minimize(
            tf.reduce_sum(w * w) * poison)
        init = v1.global_variables_initializer()
    # As sess.run scripts do: the session first, then the initializer as its first run.
    sess = npurun.util.session(_npu_config(), graph=graph, log_step_count_steps=1)
    with caplog.at_level(logging.INFO, logger="npurun"):
        sess.run(w.initializer)  # a run before the loss-scale variables are initialized
        sess.run(init)
        before = sess.run(w)
        sess.run(train)
        sess.run(train, {poison: np.inf})
        after = sess.run(w)
    sess.close()
    np.testing.assert_allclose(after, before * 0.8)  # one good step, one skipped
    messages = [r.getMessage() for r in caplog.records if r.name == "npurun"]
    assert any("1 step(s) skipped" in m for m in messages), messages
