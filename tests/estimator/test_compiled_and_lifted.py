"""Whole-step XLA compilation in NPUEstimator.train, and what leaves a loop or compiled step:
model_fn's summaries (lifted to the host) and hook fetches of its tensors."""
import os
import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from estimator_helpers import FEATURES, input_fn_for, make_data
from npurun.estimator import EstimatorSpec, NPUEstimator, NPUEstimatorSpec
from op_names import MATMUL

v1 = tf.compat.v1
X, Y = make_data()
MODEL_OPS = MATMUL | {"Relu", "ResourceApplyGradientDescent"}  # MATMUL: with oneDNN's names too
LOOP_OPS = {"While", "StatelessWhile", "Enter", "Exit", "NextIteration", "LoopCond"}


def model_fn(features, labels, mode, params):
    x = features["x"]
    w1 = v1.get_variable("w1", [FEATURES, 16], initializer=v1.glorot_uniform_initializer(seed=1))
    w2 = v1.get_variable("w2", [16, 3], initializer=v1.glorot_uniform_initializer(seed=2))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    v1.summary.scalar("model_loss", loss)
    v1.summary.histogram("w2_values", w2)
    if params.get("ragged_summary"):
        v1.summary.histogram("batch_logits", tf.boolean_mask(logits, logits[:, 0] > 0))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    hooks = [hook(loss, logits) for hook in params.get("hooks", ())]
    return EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)


class OpTypesHook(v1.train.SessionRunHook):
    """Records the op types of the executed partition graphs of each run."""

    def __init__(self):
        self.ops = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(None, options=v1.RunOptions(output_partition_graphs=True))

    def after_run(self, run_context, run_values):
        self.ops.append({n.op for g in run_values.run_metadata.partition_graphs for n in g.node})


class LossFetchHook(v1.train.SessionRunHook):
    """Fetches model_fn's loss tensor each run (held from model_fn, like LoggingTensorHook)."""

    def __init__(self, loss, logits):
        self.loss = loss
        self.values = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self.loss)

    def after_run(self, run_context, run_values):
        self.values.append(float(run_values.results))


class LogitsFetchHook(LossFetchHook):
    def __init__(self, loss, logits):
        super().__init__(logits, None)


def _train(make_config, model_dir, steps, hooks=(), params=None, **options):
    options.setdefault("save_checkpoints_steps", 1000)  # only the final one
    est = NPUEstimator(model_fn, model_dir=model_dir, params=params or {}, config=make_config(**options))
    est.train(input_fn_for(X, Y), steps=steps, hooks=list(hooks))
    return est


def _weights(est):
    reader = tf.train.load_checkpoint(est.model_dir)
    return {name: reader.get_tensor(name) for name in ("w1", "w2", "global_step")}


def _events(model_dir):
    acc = event_accumulator.EventAccumulator(model_dir, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    scalars = {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}
    histograms = {tag: sorted(e.step for e in acc.Histograms(tag)) for tag in acc.Tags()["histograms"]}
    return scalars, histograms


def test_whole_step_jit_runs_model_fn_as_one_xla_computation(make_config, tmp_path):
    plain = _train(make_config, str(tmp_path / "plain"), 12, jit_compile="false")
    ops = OpTypesHook()
    compiled = _train(make_config, str(tmp_path / "xla"), 12, hooks=[ops], jit_compile="true")
    assert all("XlaLaunch" in run for run in ops.ops)
    assert not ops.ops[-1] & MODEL_OPS, "no op of the model runs outside the XLA computation"
    assert not any("XlaLaunch" in run for run in _ops_of_plain(make_config, tmp_path))
    got, want = _weights(compiled), _weights(plain)
    assert got["global_step"] == want["global_step"] == 12
    # XLA fuses and reorders float arithmetic: equal up to float32 rounding over 12 steps
    for name in ("w1", "w2"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-6)


def _ops_of_plain(make_config, tmp_path):
    ops = OpTypesHook()
    _train(make_config, str(tmp_path / "plain_ops"), 2, hooks=[ops], jit_compile="false")
    return ops.ops


@pytest.mark.parametrize("setting", ["loop", "auto"], ids=["whole_loop_gpu_path", "cpu_default_step"])
def test_compiled_device_loop_matches_single_steps(make_config, tmp_path, monkeypatch, setting):
    # "loop": the whole loop is one computation (a GPU's default, forced here); "auto" on this CPU:
    # each iteration's step is one computation inside the executor's loop (runtime/compilation.py).
    monkeypatch.setenv("NPURUN_XLA_DEVICE_LOOP", setting)
    plain = _train(make_config, str(tmp_path / "plain"), 12, jit_compile="false")
    ops = OpTypesHook()
    looped = _train(make_config, str(tmp_path / "loop"), 12, hooks=[ops], jit_compile="true",
                    iterations_per_loop=4)
    assert len(ops.ops) == 12 // 4
    assert "XlaLaunch" in ops.ops[-1]
    assert not ops.ops[-1] & MODEL_OPS, "the model runs inside XLA"
    if setting == "loop":
        assert not ops.ops[-1] & LOOP_OPS, "the loop runs inside XLA"
    else:
        assert ops.ops[-1] & LOOP_OPS and "IteratorGetNext" in ops.ops[-1], "the executor runs the loop"
    got, want = _weights(looped), _weights(plain)
    assert got["global_step"] == 12
    for name in ("w1", "w2"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("setting,trained", [("loop", 10), ("step", 12)])
def test_compiled_loop_with_a_finite_input(make_config, model_dir, monkeypatch, setting, trained):
    monkeypatch.setenv("NPURUN_XLA_DEVICE_LOOP", setting)
    est = NPUEstimator(model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", iterations_per_loop=5))
    # 96 examples in batches of 8: 12 batches. A whole compiled loop takes 5 stacked batches, so two
    # loops of 5 and the last 2 batches make no loop; a compiled step reads batch by batch: all 12.
    est.train(input_fn_for(X, Y, repeat=False), steps=50)
    assert tf.train.load_checkpoint(model_dir).get_tensor("global_step") == trained


def conv_model_fn(features, labels, mode, params):
    images = tf.reshape(features["x"], [-1, 2, FEATURES // 2, 1])
    kernel = v1.get_variable("k", [2, 2, 1, 3], initializer=v1.glorot_uniform_initializer(seed=1))
    hidden = tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME"))
    w = v1.get_variable("w", [hidden.shape[1] * hidden.shape[2] * 3, 3],
                        initializer=v1.glorot_uniform_initializer(seed=2))
    logits = tf.matmul(tf.reshape(hidden, [-1, w.shape[0]]), w)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_cpu_convnet_device_loop_with_xla_compiles_the_step_not_the_loop(make_config, model_dir, monkeypatch):
    # The rule (docs/compilation.md): on a CPU, jit_compile="true" with iterations_per_loop > 1
    # compiles each step inside the executor's loop, because XLA's CPU backend runs convolution
    # gradients inside a compiled loop as generic loops. No cost warning then.
    from npurun.runtime import compilation

    monkeypatch.delenv("NPURUN_XLA_DEVICE_LOOP", raising=False)
    ops = OpTypesHook()
    est = NPUEstimator(conv_model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", iterations_per_loop=2, save_checkpoints_steps=1000))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.train(input_fn_for(X, Y), steps=4, hooks=[ops])
    assert not [w for w in caught if issubclass(w.category, compilation.XlaLoopCostWarning)]
    assert "XlaLaunch" in ops.ops[-1] and ops.ops[-1] & LOOP_OPS
    conv_ops = {"Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "_MklNativeConv2D", "_FusedConv2D",
                "_MklNativeConv2DBackpropFilter", "_MklNativeConv2DBackpropInput", "_MklNativeFusedConv2D"}
    assert not ops.ops[-1] & conv_ops, "the convolutions run inside the compiled step"
    assert est.get_variable_value("global_step") == 4


def test_cpu_convnet_whole_xla_loop_warns_with_the_measured_cost(make_config, model_dir, monkeypatch):
    from npurun.runtime import compilation

    monkeypatch.setenv("NPURUN_XLA_DEVICE_LOOP", "loop")
    est = NPUEstimator(conv_model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", iterations_per_loop=2, save_checkpoints_steps=1000))
    with pytest.warns(compilation.XlaLoopCostWarning, match=r"\d convolution gradient op\(s\) inside a loop on the "
                      r"CPU.*measured \d+x slower per step than compiling each step") as caught:
        est.train(input_fn_for(X, Y), steps=2)
    assert len([w for w in caught if issubclass(w.category, compilation.XlaLoopCostWarning)]) == 1
    assert est.get_variable_value("global_step") == 2


@pytest.mark.parametrize("iterations", [1, 2], ids=["step", "cpu_loop_of_compiled_steps"])
def test_whole_step_jit_names_the_op_xla_cannot_compile(make_config, model_dir, iterations):
    def stringy_model_fn(features, labels, mode):
        x = tf.strings.to_number(tf.strings.as_string(features["x"]))
        w = v1.get_variable("w", [FEATURES, 3])
        loss = v1.losses.sparse_softmax_cross_entropy(labels, tf.matmul(x, w))
        return EstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=v1.train.get_global_step()))

    # iterations 2 on a CPU: the computation is inside the loop body's function, and still checked
    est = NPUEstimator(stringy_model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", iterations_per_loop=iterations))
    with pytest.raises(ValueError, match="(?s)mix_compile_mode=False.*AsString.*XLA has no kernel"):
        est.train(input_fn_for(X, Y), steps=2)
    assert tf.train.latest_checkpoint(model_dir) is None


@pytest.mark.parametrize("mode", [dict(iterations_per_loop=5), dict(jit_compile="true"),
                                  dict(jit_compile="true", iterations_per_loop=5)],
                         ids=["loop", "compiled-step", "compiled-loop"])
def test_model_fn_summaries_are_written_where_they_cannot_run(make_config, model_dir, mode):
    _train(make_config, model_dir, 20, save_summary_steps=4, **mode)
    scalars, histograms = _events(model_dir)
    wanted = [4, 8, 12, 16, 20]
    assert sorted(scalars["model_loss"]) == wanted, "every multiple of save_summary_steps, inside loops too"
    for step in wanted:  # the same step's loss as the Estimator's own loss summary
        assert scalars["model_loss"][step] == pytest.approx(scalars["loss"][step], rel=1e-6)
    assert histograms["w2_values"] == wanted


def _histogram_sums_of_squares(model_dir, tag):
    # Not the plain sum: softmax cross-entropy's gradient sums to zero over the classes, so the sum
    # of the output weights only moves by rounding from one step to the next.
    acc = event_accumulator.EventAccumulator(model_dir, size_guidance={"histograms": 0})
    acc.Reload()
    return [e.histogram_value.sum_squares for e in acc.Histograms(tag)]


@pytest.mark.parametrize("mode", [dict(iterations_per_loop=5), dict(jit_compile="true", iterations_per_loop=5)],
                         ids=["loop", "compiled-loop"])
def test_summaries_of_variables_show_each_steps_value(make_config, model_dir, mode):
    est = _train(make_config, model_dir, 5, save_summary_steps=1, **mode)
    sums = _histogram_sums_of_squares(model_dir, "w2_values")
    assert len(sums) == 5 and len(set(sums)) == 5, "each step of the loop wrote its own weights"
    # A step's summary shows the weights after that step's update: step 5's are the trained ones.
    final = float(np.sum(np.square(est.get_variable_value("w2").astype(np.float64))))
    assert sums[-1] == pytest.approx(final, rel=1e-6)


def test_dict_host_call_and_model_fn_summaries_together_in_a_loop(make_config, model_dir):
    def host_fn(loss, scaled):
        return [v1.summary.scalar("host_loss", loss), v1.summary.scalar("host_scaled", scaled)]

    def model_fn_with_host_call(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        return NPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op,
                                host_call=(host_fn, {"scaled": 3.0 * spec.loss, "loss": spec.loss}))

    est = NPUEstimator(model_fn_with_host_call, model_dir=model_dir,
                       config=make_config(iterations_per_loop=4, save_summary_steps=2, save_checkpoints_steps=0))
    est.train(input_fn_for(X, Y), steps=8)
    scalars, histograms = _events(model_dir)
    assert sorted(scalars["host_loss"]) == sorted(scalars["model_loss"]) == [2, 4, 6, 8]
    for step in (2, 4, 6, 8):  # keyword arguments matched by name, summaries of the same step
        assert scalars["host_loss"][step] == pytest.approx(scalars["model_loss"][step], rel=1e-6)
        assert scalars["host_scaled"][step] == pytest.approx(3 * scalars["loss"][step], rel=1e-5)
    assert histograms["w2_values"] == [2, 4, 6, 8]


@pytest.mark.parametrize("iterations", [1, 4])
def test_compiled_training_without_labels(make_config, model_dir, iterations):
    def unsupervised_model_fn(features, mode):
        w = v1.get_variable("w", [FEATURES, 2], initializer=v1.glorot_uniform_initializer(seed=1))
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w)))
        return EstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(0.01).minimize(
            loss, global_step=v1.train.get_global_step()))

    ops = OpTypesHook()
    est = NPUEstimator(unsupervised_model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", iterations_per_loop=iterations))
    est.train(input_fn_for(X), steps=8, hooks=[ops])
    assert est.get_variable_value("global_step") == 8
    assert "XlaLaunch" in ops.ops[-1]


class HoldsLogitsHook(v1.train.SessionRunHook):
    """Keeps model_fn's logits without fetching them (allowed)."""

    def __init__(self, loss, logits):
        self.logits = logits
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_summary_without_static_shape_in_a_loop_warns_and_is_left_out(make_config, model_dir):
    with pytest.warns(UserWarning, match="batch_logits.*static shape"):
        _train(make_config, model_dir, 10, save_summary_steps=5, iterations_per_loop=5,
               params={"ragged_summary": True})
    scalars, histograms = _events(model_dir)
    assert "batch_logits" not in histograms and sorted(scalars["model_loss"]) == [5, 10]


@pytest.mark.parametrize("mode", [dict(iterations_per_loop=4), dict(jit_compile="true")], ids=["loop", "compiled"])
def test_hooks_fetching_the_loss_get_its_host_value(make_config, model_dir, mode):
    hooks = []
    params = {"hooks": [lambda loss, logits: hooks.append(LossFetchHook(loss, logits)) or hooks[-1]]}
    _train(make_config, model_dir, 12, params=params, save_summary_steps=1, **mode)
    scalars, _ = _events(model_dir)
    steps_per_run = mode.get("iterations_per_loop", 1)
    runs = [steps_per_run * (k + 1) for k in range(12 // steps_per_run)]
    # the value a run gives is the loss of its last step
    assert hooks[0].values == pytest.approx([scalars["loss"][s] for s in runs], rel=1e-6)


@pytest.mark.parametrize("mode", [dict(iterations_per_loop=4), dict(jit_compile="true")], ids=["loop", "compiled"])
def test_hook_fetching_another_inner_tensor_is_a_clear_error(make_config, model_dir, mode):
    params = {"hooks": [LogitsFetchHook]}
    with pytest.raises(ValueError, match="LogitsFetchHook fetches .*MatMul_1.* built inside the"):
        _train(make_config, model_dir, 8, params=params, **mode)
    # Nothing trained: at most the checkpoint of the start state (written before the first run, as tf.estimator).
    assert tf.train.latest_checkpoint(model_dir) in (None, os.path.join(model_dir, "model.ckpt-0"))


def test_hook_holding_an_inner_tensor_without_fetching_it_is_fine(make_config, model_dir):
    hooks = []
    params = {"hooks": [lambda loss, logits: hooks.append(HoldsLogitsHook(loss, logits)) or hooks[-1]]}
    _train(make_config, model_dir, 8, params=params, iterations_per_loop=4)
    assert hooks[0].runs == 2


def test_logging_tensor_hook_on_the_loss_works_in_a_loop(make_config, model_dir):
    def logging_hook(loss, logits):
        return v1.train.LoggingTensorHook({"loss": loss}, every_n_iter=1)

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _train(make_config, model_dir, 8, params={"hooks": [logging_hook]}, iterations_per_loop=4)
    assert tf.train.load_checkpoint(model_dir).get_tensor("global_step") == 8


def dynamic_range_model_fn(features, labels, mode):
    w = v1.get_variable("w", [FEATURES, 3])
    count = tf.reduce_max(labels) + 2
    extra = tf.cast(tf.reduce_sum(tf.range(count)), tf.float32)  # Range's limit must be static for XLA
    loss = v1.losses.sparse_softmax_cross_entropy(labels, tf.matmul(features["x"], w)) + 0.0 * extra
    return EstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step()))


@pytest.mark.parametrize("iterations", [1, 2], ids=["step", "loop"])
def test_xla_failing_at_run_time_names_the_op_and_where_it_was_built(make_config, model_dir, iterations):
    est = NPUEstimator(dynamic_range_model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", iterations_per_loop=iterations))
    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        est.train(input_fn_for(X, Y), steps=2)
    message = caught.value.message
    assert message.startswith("XLA could not compile the training step (jit_compile='true'")
    assert "compile-time constant" in message
    assert "op: range, created at " + __file__ in message and "in dynamic_range_model_fn" in message
    assert "mix_compile_mode=True" in message
    # Nothing trained: only the checkpoint of the start state (written before the first run, as tf.estimator).
    assert tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "model.ckpt-0")


def test_mixed_mode_trains_what_whole_mode_cannot_compile(make_config, model_dir):
    est = NPUEstimator(dynamic_range_model_fn, model_dir=model_dir,
                       config=make_config(jit_compile="true", mix_compile_mode=True))
    est.train(input_fn_for(X, Y), steps=2)
    assert est.get_variable_value("global_step") == 2


class CrashAfter(v1.train.SessionRunHook):
    """Fails the loop run that reaches `step` (after its update, before its checkpoint): a crash.

    Counts runs of 4 steps rather than reading the global step, whose read is concurrent with the
    loop's update (either value can come back)."""

    def __init__(self, step):
        self.step = step
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1
        if self.runs * 4 >= self.step:
            raise RuntimeError("simulated crash")


def test_compiled_loop_resumes_after_a_crash_where_the_input_stopped(make_config, tmp_path):
    def estimator(model_dir):
        return NPUEstimator(model_fn, model_dir=model_dir, config=make_config(
            jit_compile="true", iterations_per_loop=4, save_checkpoints_steps=4))

    straight = estimator(str(tmp_path / "straight"))
    straight.train(input_fn_for(X, Y, shuffle=True, seed=5), steps=16)
    crashed = estimator(str(tmp_path / "crashed"))
    with pytest.raises(RuntimeError, match="simulated crash"):
        crashed.train(input_fn_for(X, Y, shuffle=True, seed=5), steps=16, hooks=[CrashAfter(12)])
    assert crashed.latest_checkpoint().endswith("model.ckpt-8")
    crashed.train(input_fn_for(X, Y, shuffle=True, seed=5), max_steps=16)  # restores the input's position too
    got, want = _weights(crashed), _weights(straight)
    assert got["global_step"] == want["global_step"] == 16
    for name in ("w1", "w2"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7)


def test_logging_tensor_hook_on_another_inner_tensor_is_a_clear_error(make_config, model_dir):
    def logging_hook(loss, logits):
        return v1.train.LoggingTensorHook({"logits": logits}, every_n_iter=1)

    with pytest.raises(ValueError, match="LoggingTensorHook fetches .*MatMul_1.* built inside the device loop") as caught:
        _train(make_config, model_dir, 8, params={"hooks": [logging_hook]}, iterations_per_loop=4)
    assert type(caught.value).__name__ == "InnerTensorError"
