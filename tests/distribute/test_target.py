"""`SessionPlan.target` without TF_CONFIG: 2 ranks from RANK_ID / RANK_SIZE only (ports from
NPURUN_BASE_PORT), each creating its session on `plan.target` with the plan's ConfigProto and hooks,
as the Estimator does, all-reduce rank + 1 (1 + 2 = 3 on both)."""
import pytest

from .conftest import assert_ok, run_ranks


@pytest.mark.slow
def test_ranks_without_tf_config_run_collectives_on_the_plan_target(out):
    results = run_ranks("plan_target.py", 2, out, tf_config=False, extra={"all": {"HCCL_CONNECT_TIMEOUT": "60"}})
    assert_ok(results)
    reports = [r.results(out) for r in results]
    ports = [int(report["target"].rsplit(":", 1)[1]) for report in reports]
    assert all(report["target"].startswith("grpc://127.0.0.1:") for report in reports)
    assert ports[1] == ports[0] + 1  # NPURUN_BASE_PORT + local rank
    assert [report["value"] for report in reports] == [[3.0], [3.0]]
    assert {"NPUBroadcastGlobalVariablesHook", "StartupHook"} <= set(reports[0]["hooks"])


@pytest.mark.slow
def test_estimator_trains_on_ranks_without_tf_config(out):
    results = run_ranks("estimator_no_tf_config.py", 2, out, tf_config=False, timeout=150,
                        extra={"all": {"HCCL_CONNECT_TIMEOUT": "60"}})
    assert_ok(results)
    reports = [r.results(out) for r in results]
    assert [r["tf_config"] or None for r in reports] == [None, None]
    assert all(r["target"].startswith("grpc://127.0.0.1:") for r in reports)
    # differently initialised ranks end bit-identical: broadcast and all-reduced gradients
    assert reports[0]["weights_hex"] == reports[1]["weights_hex"]
    assert [r["is_chief"] for r in reports] == [True, False]
    assert "model.ckpt-6.index" in reports[0]["checkpoints"] and reports[1]["checkpoints"] == []
