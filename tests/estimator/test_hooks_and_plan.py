"""The SessionRunHook protocol, and the session plan (hooks, transforms, device, ConfigProto) honoured."""
import logging
import time

import pytest
import tensorflow as tf

import npurun.estimator.estimator as estimator_module
from estimator_helpers import input_fn_for, linear_logits, make_data, model_fn
from npurun.estimator import EstimatorSpec, NPUEstimator

v1 = tf.compat.v1
X, Y = make_data()


class Recorder(v1.train.SessionRunHook):
    """Records the protocol calls; feeds, fetches and options as configured."""

    def __init__(self, name, log, options=None, feed=None, stop_at=None):
        self.name, self.log, self.options, self.feed, self.stop_at = name, log, options, feed, stop_at
        self.results, self.metadata, self.seen_options = [], [], []

    def begin(self):
        self.log.append((self.name, "begin", tf.compat.v1.get_default_graph().finalized))
        self.step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self.log.append((self.name, "after_create_session", session.graph.finalized))

    def before_run(self, run_context):
        feed = {v1.get_default_graph().get_tensor_by_name(k): v for k, v in (self.feed or {}).items()}
        return v1.train.SessionRunArgs({"step": self.step}, feed_dict=feed or None, options=self.options)

    def after_run(self, run_context, run_values):
        self.results.append(run_values.results["step"])
        self.metadata.append(run_values.run_metadata)
        self.seen_options.append(run_values.options)
        if self.stop_at is not None and len(self.results) >= self.stop_at:
            run_context.request_stop()

    def end(self, session):
        self.log.append((self.name, "end", int(session.run(self.step))))


def scaled_model_fn(features, labels, mode):
    """The learning rate is multiplied by a feedable 'lr_scale' (default 1)."""
    scale = v1.placeholder_with_default(1.0, [], name="lr_scale")
    logits = linear_logits(features["x"])
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.1 * scale).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_hook_protocol_order_fetches_and_stop(make_config, model_dir):
    log = []
    first = Recorder("a", log, stop_at=4)
    second = Recorder("b", log)
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y), steps=10, hooks=[first, second])
    # begin before finalisation, after_create_session on the finalised graph, end last.
    assert log == [("a", "begin", False), ("b", "begin", False), ("a", "after_create_session", True),
                   ("b", "after_create_session", True), ("a", "end", 4), ("b", "end", 4)]
    # Both hooks fetch the global step: one read per run, given to both. It is read concurrently with
    # the run's update, so run k sees k or k + 1.
    assert first.results == second.results and len(first.results) == 4
    assert all(k <= value <= k + 1 for k, value in enumerate(first.results))
    assert est.get_variable_value("global_step") == 4  # request_stop ended training


def test_feeds_and_run_options_are_merged(make_config, model_dir):
    log = []
    tracer = Recorder("trace", log, options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE))
    timeout = Recorder("timeout", log, options=v1.RunOptions(timeout_in_ms=60000), feed={"lr_scale:0": 0.0})
    est = NPUEstimator(scaled_model_fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y), steps=1)
    before = est.get_variable_value("linear/w")
    est.train(input_fn_for(X, Y), steps=3, hooks=[tracer, timeout])
    assert (est.get_variable_value("linear/w") == before).all()  # the fed scale 0 froze the weights
    for options in tracer.seen_options + timeout.seen_options:
        assert options.trace_level == v1.RunOptions.FULL_TRACE and options.timeout_in_ms == 60000
    assert all(len(metadata.step_stats.dev_stats) > 0 for metadata in tracer.metadata)


def test_two_hooks_feeding_the_same_tensor_is_an_error(make_config, model_dir):
    hooks = [Recorder(n, [], feed={"lr_scale:0": 0.5}) for n in "ab"]
    est = NPUEstimator(scaled_model_fn, model_dir=model_dir, config=make_config())
    with pytest.raises(RuntimeError, match="same tensor"):
        est.train(input_fn_for(X, Y), steps=1, hooks=hooks)


def test_spec_hooks_run_in_their_mode(make_config, model_dir):
    log = []

    def fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        return spec._replace(training_hooks=(Recorder("train", log),), evaluation_hooks=(Recorder("eval", log),))

    est = NPUEstimator(fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y), steps=2)
    est.evaluate(input_fn_for(X, Y, repeat=False), steps=3)
    assert [entry[:2] for entry in log if entry[1] == "end"] == [("train", "end"), ("eval", "end")]


def test_the_whole_plan_is_honoured(make_config, model_dir, monkeypatch):
    """Graph transforms (after model_fn, before finalising), plan hooks, device, environment."""
    seen = {}
    plan_hook = Recorder("plan", [])
    real_build_plan = estimator_module.build_plan

    def transform(graph, mode):
        seen.setdefault("transforms", []).append((mode, graph.finalized, graph.get_operation_by_name("linear/w").name))

    def build_plan(options, mode):
        plan = real_build_plan(options, mode)
        plan.graph_transforms.append(transform)
        plan.hooks.append(plan_hook)
        plan.device = "/device:CPU:0"
        plan.env["NPURUN_TEST_PLAN_ENV"] = mode
        return plan

    class EnvProbe(v1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            import os
            seen["env"] = os.environ.get("NPURUN_TEST_PLAN_ENV")

    def fn(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        seen.setdefault("device", v1.trainable_variables()[0].device)
        return spec

    monkeypatch.setattr(estimator_module, "build_plan", build_plan)
    est = NPUEstimator(fn, model_dir=model_dir, config=make_config())
    est.train(input_fn_for(X, Y), steps=3, hooks=[EnvProbe()])
    est.evaluate(input_fn_for(X, Y, repeat=False))
    assert seen["transforms"] == [("train", False, "linear/w"), ("eval", False, "linear/w")]
    # The plan's hook took part in every run: 3 training steps, then 12 evaluation batches. (Its
    # fetched global step is read concurrently with the train op, so its values are not compared.)
    assert len(plan_hook.results) == 3 + 12
    assert seen["device"].endswith("device:CPU:0")
    assert seen["env"] == "train"


def test_session_device_id(make_config, model_dir, monkeypatch):
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("checks the CPU-only rules")
    est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(session_device_id=0))
    est.train(input_fn_for(X, Y), steps=2)
    assert est.last_plan.device == "/device:CPU:0"
    bad = NPUEstimator(model_fn, model_dir=model_dir, config=make_config(session_device_id=8))
    with pytest.raises(ValueError, match=r"session_device_id.*got 8.*allowed: 0\.\.7"):
        bad.train(input_fn_for(X, Y), steps=1)
    monkeypatch.setenv("ASCEND_DEVICE_ID", "9")
    with pytest.raises(ValueError, match="ASCEND_DEVICE_ID"):
        NPUEstimator(model_fn, model_dir=model_dir, config=make_config()).train(input_fn_for(X, Y), steps=1)
    est.train(input_fn_for(X, Y), steps=1)  # session_device_id=0 wins over the environment
    assert est.get_variable_value("global_step") == 3


def test_a_device_id_a_script_sets_itself_runs_on_the_one_device_with_one_warning(make_config, model_dir,
                                                                                  monkeypatch, caplog):
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("checks the CPU-only rules")
    from npurun.runtime import session_options

    monkeypatch.setattr(session_options, "_mapped_warned", set())
    monkeypatch.setenv("ASCEND_DEVICE_ID", "4")  # as a script written for card 4 of a server sets it
    with caplog.at_level(logging.WARNING, logger="npurun"):
        est = NPUEstimator(model_fn, model_dir=model_dir, config=make_config())
        est.train(input_fn_for(X, Y), steps=1)
        est.train(input_fn_for(X, Y), steps=1)
    assert est.last_plan.device == "/device:CPU:0"
    warned = [r.getMessage() for r in caplog.records if "device id 4" in r.getMessage()]
    assert len(warned) == 1 and "the CPU" in warned[0], warned


def test_a_session_whose_start_failed_is_collected_without_an_error(monkeypatch):
    import gc
    import sys

    from npurun import NPURunConfig
    from npurun.util import NPUSession

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info))
    with pytest.raises(ValueError, match="session_device_id"):
        NPUSession(NPURunConfig(session_device_id=8))
    gc.collect()
    assert not seen, [str(info.exc_value) for info in seen]


@pytest.mark.parametrize("raw", ["\u00b2", "\u0663", "+1", "1_0", "9" * 30])
def test_ascend_device_id_takes_ascii_digits_only(monkeypatch, raw):
    from npurun.runtime.session_options import resolve_device_id

    monkeypatch.setenv("ASCEND_DEVICE_ID", raw)
    with pytest.raises(ValueError, match="environment variable ASCEND_DEVICE_ID.*ASCII digits"):
        resolve_device_id({"session_device_id": None})
    monkeypatch.setenv("ASCEND_DEVICE_ID", " 3 ")
    assert resolve_device_id({"session_device_id": None}) == 3


def test_op_wait_timeout_ends_a_blocked_op(make_config, model_dir):
    def blocked(features, labels, mode):
        queue = tf.queue.FIFOQueue(1, tf.float32)  # never filled: dequeue blocks
        logits = linear_logits(features["x"]) * queue.dequeue()
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        return EstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=v1.train.get_global_step()))

    est = NPUEstimator(blocked, model_dir=model_dir, config=make_config(op_wait_timeout=1))
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError):
        est.train(input_fn_for(X, Y), steps=1)
    assert time.monotonic() - start < 30
    assert est.last_plan.config_proto.operation_timeout_in_ms == 1000


def test_dynamic_input_ranges_check_the_estimators_training_batches(make_config, model_dir):
    ranges = "getnext:[2~8,4],[2~8]"
    config = make_config(dynamic_input=True, dynamic_inputs_shape_range=ranges, save_checkpoints_steps=1)
    est = NPUEstimator(model_fn, model_dir=model_dir, config=config)
    est.train(input_fn_for(X, Y, batch=8), steps=2)  # in range
    assert est.get_variable_value("global_step") == 2
    out_of_range = NPUEstimator(model_fn, model_dir=model_dir + "_big", config=config)
    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        out_of_range.train(input_fn_for(X, Y, batch=16), steps=2)
    message = caught.value.message
    assert "getnext input 0 (0/x), dimension 0: size" in message and "[16]" in message and "is outside 2~8" in message
    # Only the checkpoint of the state training started from (as tf.estimator writes it) exists.
    assert tf.train.latest_checkpoint(model_dir + "_big").endswith("model.ckpt-0")
