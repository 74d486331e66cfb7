"""The plan contributor adds hooks only for switched-on options; defaults cost nothing."""
import json

import pytest

import npurun
from npurun.debug.contribute import contribute
from npurun.debug.dump import TensorDumpHook
from npurun.debug.overflow import OverflowHook
from npurun.debug.profiling import ProfilingHook
from npurun.runtime.contributors import CONTRIBUTORS
from npurun.runtime.contributors import build_plan
from npurun.runtime.plan import SessionPlan

MODES = ("train", "eval", "infer")


def _own_plan(options, mode):
    plan = SessionPlan(config_proto=None)
    contribute(options, mode, plan)
    return plan


def test_registered_as_a_plan_contributor():
    assert contribute in CONTRIBUTORS


@pytest.mark.parametrize("mode", MODES)
def test_defaults_add_no_hook_and_no_transform(mode):
    options = npurun.NPURunConfig().options
    own = _own_plan(options, mode)
    assert own.hooks == [] and own.graph_transforms == [] and own.env == {}
    plan = build_plan(options, mode)
    assert not any(type(h).__module__.startswith("npurun.debug") for h in plan.hooks)


@pytest.mark.parametrize("mode", MODES)
def test_switched_off_configs_add_nothing(mode, dump_path, tmp_path):
    options = npurun.NPURunConfig(
        dump_config=npurun.DumpConfig(enable_dump=False, dump_path=dump_path, dump_step="0"),
        profiling_config=npurun.ProfilingConfig(False, json.dumps({"output": str(tmp_path), "task_trace": "on"})),
        enable_exception_dump=1).options
    plan = _own_plan(options, mode)
    assert plan.hooks == [] and plan.graph_transforms == []


def test_each_switch_adds_its_hook(dump_path, tmp_path):
    options = npurun.NPURunConfig(
        dump_config=npurun.DumpConfig(enable_dump=True, enable_dump_debug=True, dump_path=dump_path),
        profiling_config=npurun.ProfilingConfig(True, json.dumps({"output": str(tmp_path), "training_trace": "on"})),
        iterations_per_loop=1).options
    plan = _own_plan(options, "train")
    assert [type(h) for h in plan.hooks] == [TensorDumpHook, OverflowHook, ProfilingHook]
    # Tensor and overflow dumps of one session share one dump directory.
    assert plan.hooks[0]._writer is plan.hooks[1]._writer
    assert plan.graph_transforms == []


def test_profiling_without_a_trace_warns_and_adds_nothing(tmp_path):
    options = npurun.NPURunConfig(profiling_config=npurun.ProfilingConfig(
        True, json.dumps({"output": str(tmp_path), "training_trace": "off"}))).options
    with pytest.warns(UserWarning, match="neither training_trace nor task_trace"):
        plan = _own_plan(options, "train")
    assert plan.hooks == []


def test_dump_hook_requests_nothing_at_unselected_steps(dump_path):
    import tensorflow as tf
    from .helpers import linear_model

    dump = npurun.DumpConfig(enable_dump=True, dump_path=dump_path, dump_step="5")
    graph = tf.Graph()
    with graph.as_default():
        model = linear_model()
        hook = TensorDumpHook(dump, "train")
        hook.begin()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            hook.after_create_session(session, None)
            context = tf.compat.v1.train.SessionRunContext(
                tf.compat.v1.train.SessionRunArgs(model["train"]), session)
            assert hook.before_run(context) is None          # step 0: not selected
            hook._tracker.step = 5
            assert hook.before_run(context) is not None      # step 5: selected
