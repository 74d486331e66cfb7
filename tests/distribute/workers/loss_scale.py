"""Distributed loss scaling: one rank's overflow makes every rank skip the step.

argv: STEPS POISON_STEP. For is_tailing_optimization False, then True (one graph and session
each), 2+ ranks train the synthetic model with NPUOptimizer(is_distributed=True, is_loss_scale=True)
and an ExponentialUpdateLossScaleManager(2**10, 1000, decr_every_n_nan_or_inf=1). At POISON_STEP,
rank 1 multiplies its loss by inf. Records the weights before/after every step, the loss scale
and the number of collective ops in each graph.

NPUOptimizer(is_distributed=True) itself routes its gradients and overflow flag through
npurun.distribute (no subclass needed).
"""
import sys

import model
import numpy as np
from common import RANK, tf, write

from npurun.distribute import cluster, get_rank_size
from npurun.distribute.optimizer import collective_count
from npurun.precision import ExponentialUpdateLossScaleManager, NPUOptimizer


steps, poison_step = int(sys.argv[1]), int(sys.argv[2])
n = get_rank_size()
global_batch = 4 * n
batch = global_batch // n
x, ids, y = model.make_data(steps, global_batch)
part = slice(RANK * batch, (RANK + 1) * batch)
report = {}
for tailing in (False, True):
    with tf.Graph().as_default() as graph:
        net = model.build(seed=100, batch=batch)
        poison = tf.compat.v1.placeholder_with_default(1.0, [])
        manager = ExponentialUpdateLossScaleManager(2 ** 10, 1000, decr_every_n_nan_or_inf=1)
        opt = NPUOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.05), manager,
                           is_distributed=True, is_loss_scale=True, is_tailing_optimization=tailing)
        train_op = opt.minimize(net["loss"] * poison)
        collectives = collective_count(graph)
        session = cluster.create_session(graph=graph)
        session.run(tf.compat.v1.global_variables_initializer())
        history, scales = [], []
        for step in range(steps):
            feed = {net["x"]: x[step, part], net["ids"]: ids[step, part], net["y"]: y[step, part]}
            if step == poison_step and RANK == 1:
                feed[poison] = np.inf
            before = model.weights(session, net)
            session.run(train_op, feed)
            after = model.weights(session, net)
            history.append(all(np.array_equal(a, b) for a, b in zip(before, after)))
            scales.append(float(session.run(manager.get_loss_scale())))
        final = model.weights(session, net)
        report[str(tailing)] = {"unchanged": history, "scales": scales, "collectives": collectives,
                                "final_hex": [w.tobytes().hex() for w in final],
                                "finite": bool(all(np.isfinite(w).all() for w in final))}
        session.close()
write(report)
