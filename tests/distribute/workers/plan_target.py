"""A session plan's target without TF_CONFIG: ranks from RANK_ID / RANK_SIZE (and NPURUN_BASE_PORT).

As the Estimator does: build the plan (which starts this rank's server), build the graph (an
all-reduce of rank + 1, and the plan's hooks), create the session on `plan.target` with the plan's
ConfigProto, run the hooks' after_create_session (bounded start-up, broadcast), then the
all-reduce. Writes the plan's target and the all-reduced value.
"""
from common import tf, write

from npurun import NPURunConfig
from npurun.distribute import get_rank_id, hccl_ops
from npurun.runtime.contributors import build_plan

v1 = tf.compat.v1
plan = build_plan(NPURunConfig(hccl_timeout=30).options, "train")
graph = tf.Graph()
with graph.as_default():
    total = hccl_ops.allreduce(tf.constant([float(get_rank_id() + 1)]), "sum")
    for hook in plan.hooks:
        hook.begin()
with v1.Session(plan.target, graph=graph, config=plan.config_proto) as session:
    for hook in plan.hooks:
        hook.after_create_session(session, None)
    value = session.run(total)
write({"target": plan.target, "value": value, "hooks": sorted(type(h).__name__ for h in plan.hooks)})
