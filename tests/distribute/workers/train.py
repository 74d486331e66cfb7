"""Data-parallel training of the synthetic model on this rank's slice of every global batch.

argv: STEPS GLOBAL_BATCH HCOM_PARALLEL(0/1) FORM (optimizer|wrapper). Every rank starts from its
own initialisation (seed = 100 + rank); NPUBroadcastGlobalVariablesHook makes them equal to rank
0's. Writes the weights after the broadcast and at the end (as float32 bytes in hex, for
bit-exact comparison), the losses, and how many collective ops the graph has.
"""
import sys

import model
from common import RANK, tf, write

from npurun.distribute import NPUBroadcastGlobalVariablesHook, NPUDistributedOptimizer, cluster, get_rank_size
from npurun.distribute import npu_distributed_optimizer_wrapper, settings
from npurun.distribute.optimizer import collective_count

steps, global_batch, parallel, form = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
n = get_rank_size()
batch = global_batch // n
x, ids, y = model.make_data(steps, global_batch)
part = slice(RANK * batch, (RANK + 1) * batch)

net = model.build(seed=100 + RANK, batch=batch)
opt = NPUDistributedOptimizer(model.optimizer()) if form == "optimizer" else \
    npu_distributed_optimizer_wrapper(model.optimizer())
with settings.use(hcom_parallel=parallel):
    train_op = opt.minimize(net["loss"])
gradient_collectives = collective_count()
hook = NPUBroadcastGlobalVariablesHook(root_rank=0)
hook.begin()
session = cluster.create_session()
session.run(tf.compat.v1.global_variables_initializer())
initial = model.weights(session, net)
hook.after_create_session(session, None)
after_broadcast = model.weights(session, net)
losses = []
for step in range(steps):
    _, loss = session.run([train_op, net["loss"]],
                          {net["x"]: x[step, part], net["ids"]: ids[step, part], net["y"]: y[step, part]})
    losses.append(float(loss))
final = model.weights(session, net)
write({"initial": [w.tolist() for w in initial], "after_broadcast": [w.tolist() for w in after_broadcast],
       "final": [w.tolist() for w in final], "final_hex": [w.tobytes().hex() for w in final], "losses": losses,
       "gradient_collectives": gradient_collectives})
