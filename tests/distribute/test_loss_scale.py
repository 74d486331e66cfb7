"""Distributed loss scaling with the precision package's NPUOptimizer: the overflow flag is combined
over the ranks, so when one rank overflows every rank skips the step (and lowers its loss scale);
with is_tailing_optimization the flag rides in the last gradient all-reduce (one collective fewer)."""
import pytest

from .conftest import assert_ok, run_ranks

STEPS, POISON = 5, 2


@pytest.mark.slow
def test_one_rank_overflow_skips_the_step_everywhere(out):
    results = run_ranks("loss_scale.py", 2, out, args=(STEPS, POISON), timeout=120)
    assert_ok(results)
    reports = [r.results(out) for r in results]
    for tailing in ("False", "True"):
        runs = [report[tailing] for report in reports]
        for run in runs:
            # only the poisoned step changed no weight, on both ranks (rank 0's own gradients were finite)
            assert run["unchanged"] == [step == POISON for step in range(STEPS)]
            # decr_ratio 0.8 (the default) after the one overflow, on both ranks
            assert run["scales"] == pytest.approx([1024.0] * POISON + [1024.0 * 0.8] * (STEPS - POISON))
            assert run["finite"]
        assert runs[0]["final_hex"] == runs[1]["final_hex"]
    # the same training either way; tailing saves the flag's own all-reduce
    assert reports[0]["True"]["final_hex"] == reports[0]["False"]["final_hex"]
    assert reports[0]["True"]["collectives"] == reports[0]["False"]["collectives"] - 1
