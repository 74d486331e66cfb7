"""Plan contributor for the distributed options: hccl_timeout, hcom_parallel, is_tailing_optimization,
horovod_mode, distribute, local_rank_id / local_device_list.

For every plan (every mode):
- the options become the current `settings`, read by the collectives (timeout) and the
  distributed optimizer (per-gradient or grouped all-reduce) while model_fn builds the graph;
- in a distributed run (more than one rank, or parameter servers) this process's
  tf.distribute.Server is started, `plan.target` is its gRPC target, and the ConfigProto gets
  `collective_group_leader` (rank 0) and `device_filters` (this task, plus /job:ps in
  parameter-server mode), so the session on `plan.target` starts without waiting for the other
  tasks.

For training plans of a distributed run, `plan.hooks` gets `StartupHook` (bounded start-up) and,
with more than one rank and horovod_mode=False, `NPUBroadcastGlobalVariablesHook(root_rank=0)`, and
with more than one rank `plan.stop_flag` (the ranks agree to stop after the same run, `stop_flag`); a
graph transform checks that every NPUOptimizer's is_tailing_optimization equals the config's.
Parameter-server mode (`distribute=`) and input feeding (`local_rank_id`) add their own parts
(`ps.py`, `feed.py`).

Rule: the cluster is TF_CONFIG's when set, else derived from RANK_TABLE_FILE or RANK_ID /
RANK_SIZE (ports NPURUN_BASE_PORT + local rank, see `cluster`); either way the session must be
created on `plan.target` (with TF_CONFIG it is the same server as `config.master`; without it
`config.master` is '' and an in-process session would not reach the other ranks).
"""
from __future__ import annotations

from . import cluster, settings


def contribute(options, mode, plan) -> None:
    settings.activate(settings.from_options(options))
    if mode == "train":
        # Single process too: the option and NPUOptimizer's flag must agree (spec: error at train time).
        plan.graph_transforms.append(_tailing_check(bool(options.get("is_tailing_optimization"))))
    layout = cluster.read_layout()
    if layout.task_type == "evaluator":
        return  # an evaluator works alone on checkpoints, in process (config.master is '')
    if options.get("distribute") is not None:
        from . import ps

        ps.contribute(options, mode, plan, layout)
    elif cluster.is_distributed(layout):
        _collective_run(options, mode, plan, layout)
    if options.get("local_rank_id") is not None:
        from . import feed

        feed.contribute(options, mode, plan, layout)


def _collective_run(options, mode, plan, layout) -> None:
    runs_per_step = int(options.get("iterations_per_loop") or 1)
    plan.config_proto.CopyFrom(cluster.configure(plan.config_proto, layout, runs_per_step))
    plan.target = cluster.ensure_server(plan.config_proto, layout).target
    if mode != "train":
        return
    from .hooks import NPUBroadcastGlobalVariablesHook, StartupHook

    plan.hooks.append(StartupHook())
    if layout.rank_size > 1:
        # Every rank stops after the same run when any of them is signalled (stop_flag.py).
        plan.stop_flag = _collective_stop_flag
    if layout.rank_size > 1 and not options.get("horovod_mode"):
        plan.hooks.append(NPUBroadcastGlobalVariablesHook(root_rank=0))


def _collective_stop_flag():
    from . import stop_flag

    return stop_flag.for_collectives()


def _tailing_check(config_value: bool):
    def check(graph, mode):
        from .optimizer import check_tailing_optimization

        check_tailing_optimization(graph, config_value)
    return check
