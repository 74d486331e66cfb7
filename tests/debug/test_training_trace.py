"""training_trace.iterations on hand-made step statistics: the grouping and point rules."""
from npurun.debug.step_stats import NodeRun
from npurun.debug.training_trace import iterations


def run(name, start, end):
    return NodeRun(name, "Op", "cpu", 0, start, end, f"{name} = Op()")


def test_one_iteration_spans_the_first_to_the_last_op_and_ignores_bookkeeping_nodes():
    runs = [run("_arg_x", 0, 5), run("a", 10, 20), run("b", 20, 40), run("_retval_b", 40, 45)]
    (it,), missing = iterations(runs, first_step=7, span=1)
    assert (it.iteration, it.start_ns, it.fp_start_ns, it.bp_end_ns, it.end_ns) == (7, 10, 10, 40, 45)
    assert missing == []


def test_a_device_loop_of_two_iterations_groups_the_ith_run_of_each_body_op():
    runs = sorted([run("pre", 0, 5), run("cond", 5, 6), run("loop/body/_1/fwd", 6, 10), run("loop/body/_1/bwd", 10, 20),
                   run("cond", 20, 21), run("loop/body/_1/fwd", 21, 30), run("loop/body/_1/bwd", 30, 35),
                   run("cond", 35, 36), run("post", 36, 40)], key=lambda r: r.start_ns)
    rows, missing = iterations(runs, first_step=10, span=2, host_call=3, fp_point="fwd", bp_point="bwd")
    assert missing == []
    assert [(r.host_call, r.iteration) for r in rows] == [(3, 10), (3, 11)]
    assert [(r.start_ns, r.fp_start_ns, r.bp_end_ns, r.end_ns) for r in rows] == [(0, 6, 20, 20), (20, 21, 35, 40)]
    assert rows[1].row()["grad_refresh_bound_us"] == 0.005 and rows[0].row()["data_aug_bound_us"] == 0.006


def test_a_point_that_does_not_run_once_per_iteration_falls_back_to_the_default():
    runs = [run("a", 0, 10), run("b", 10, 20)]
    (it,), missing = iterations(runs, 0, 1, fp_point="nowhere", bp_point="a")
    assert missing == ["nowhere"]
    assert (it.fp_start_ns, it.bp_end_ns) == (0, 10)
