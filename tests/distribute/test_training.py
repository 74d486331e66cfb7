"""Data-parallel training: bit-identical weights on every rank, equal (within tolerance) to one
process training on the combined batch; broadcast makes differently initialised ranks equal.

Model: tests/distribute/workers/model.py (embedding 10x3 + MLP 7-8-1, MSE, Momentum 0.05/0.9), 12
steps of a global batch of 12 rows split evenly over the ranks. Tolerance against the single
process: rtol 1e-5, atol 1e-6 (float32; the sums are associated differently, nothing else differs).
"""
import numpy as np
import pytest
import tensorflow as tf


from .conftest import assert_ok, run_ranks
from .workers import model

STEPS, GLOBAL_BATCH = 12, 12
RTOL, ATOL = 1e-5, 1e-6


def reference(monkeypatch, init_seed):
    """One process, the whole global batch each step, starting from `init_seed`'s initialisation."""
    for name in ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE"):
        monkeypatch.delenv(name, raising=False)
    x, ids, y = model.make_data(STEPS, GLOBAL_BATCH)
    with tf.Graph().as_default():
        net = model.build(seed=init_seed, batch=GLOBAL_BATCH)
        train_op = model.optimizer().minimize(net["loss"])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            for step in range(STEPS):
                session.run(train_op, {net["x"]: x[step], net["ids"]: ids[step], net["y"]: y[step]})
            return model.weights(session, net)


@pytest.mark.slow
@pytest.mark.parametrize("n, parallel, form", [(2, 0, "optimizer"), (3, 1, "wrapper")],
                         ids=["2ranks-grouped-NPUDistributedOptimizer", "3ranks-hcom_parallel-wrapper"])
def test_data_parallel_training(n, parallel, form, out, monkeypatch):
    results = run_ranks("train.py", n, out, args=(STEPS, GLOBAL_BATCH, parallel, form), timeout=120)
    assert_ok(results)
    reports = [r.results(out) for r in results]
    # ranks started different...
    assert reports[0]["initial"][1] != reports[1]["initial"][1]
    # ...and the broadcast made them all equal to rank 0's initial values
    for report in reports:
        assert report["after_broadcast"] == reports[0]["initial"]
    # bit-identical final weights on every rank
    for report in reports[1:]:
        assert report["final_hex"] == reports[0]["final_hex"]
    # equal to one process training on the combined batch from rank 0's initialisation
    expected = reference(monkeypatch, init_seed=100)
    for got, want in zip(reports[0]["final"], expected):
        np.testing.assert_allclose(np.array(got, np.float32), want, rtol=RTOL, atol=ATOL)
    # and training did something
    assert reports[0]["losses"][-1] < reports[0]["losses"][0]
    # gradients: the embedding's IndexedSlices take two all-gathers (values, indices); dense ones
    # one grouped all-reduce, or one all-reduce each (3 dense variables) with hcom_parallel
    assert reports[0]["gradient_collectives"] == 2 + (3 if parallel else 1)
