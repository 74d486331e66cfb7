"""All-reduce steps until told to stop; reports how a peer failure surfaced.

Env: HCCL_CONNECT_TIMEOUT (start-up), HCCL_EXEC_TIMEOUT (hccl_timeout), HCCL_TIMEOUT_OPTION
(NPURunConfig(hccl_timeout=...) applied through the session plan), STEPS (default: until a failure
or 400 steps). Prints 'step N' after each step; on an error writes rank<i>.json with the
error's type and message and the time it was raised, and exits 1.
"""
import os
import time

from common import RANK, tf, write

from npurun.distribute import cluster, errors, get_rank_size, hccl_ops, settings

steps = int(os.environ.get("STEPS", "400"))
if os.environ.get("HCCL_TIMEOUT_OPTION"):
    from npurun import NPURunConfig
    from npurun.runtime.plan import build_plan

    build_plan(NPURunConfig(hccl_timeout=int(os.environ["HCCL_TIMEOUT_OPTION"])).options, "train")
total = hccl_ops.allreduce(tf.constant([1.0]), "sum")
started = time.time()
try:
    session = cluster.create_session()
    for step in range(steps):
        value = session.run(total)
        print(f"step {step} {value[0]}", flush=True)
        time.sleep(0.05)
except Exception as error:  # report what the user would see
    error = errors.explain(error, RANK, get_rank_size(), settings.collective_timeout())
    write({"type": type(error).__name__, "message": str(error), "raised_at": time.time(), "started": started})
    print(f"{type(error).__name__}: {error}", flush=True)
    raise SystemExit(1)
write({"type": None, "steps": steps})
