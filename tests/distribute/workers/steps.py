"""All-reduce steps until told to stop; reports how a peer failure surfaced to the script.

Env: HCCL_CONNECT_TIMEOUT (start-up), HCCL_EXEC_TIMEOUT (hccl_timeout), HCCL_TIMEOUT_OPTION
(NPURunConfig(hccl_timeout=...) applied through the session plan), STEPS (default: until a failure
or 400 steps), SURFACE: "session" (default: `cluster.create_session()`, whose run explains errors)
or "explained" (a plain tf.compat.v1.Session on the server, the loop inside
`errors.explained()`). The script never calls `errors.explain` itself. Prints 'step N' after each
step; on an error writes rank<i>.json with the error's type, message, cause type and the time it
was raised, and exits 1.
"""
import contextlib
import os
import time

from common import tf, write

from npurun.distribute import cluster, errors, hccl_ops

steps = int(os.environ.get("STEPS", "400"))
surface = os.environ.get("SURFACE", "session")
if os.environ.get("HCCL_TIMEOUT_OPTION"):
    from npurun import NPURunConfig
    from npurun.runtime.contributors import build_plan

    build_plan(NPURunConfig(hccl_timeout=int(os.environ["HCCL_TIMEOUT_OPTION"])).options, "train")
total = hccl_ops.allreduce(tf.constant([1.0]), "sum")
started = time.time()
try:
    if surface == "session":
        session, block = cluster.create_session(), contextlib.nullcontext()
    else:
        proto = cluster.configure()
        server = cluster.ensure_server(proto)
        cluster.wait_for_peers()
        session, block = tf.compat.v1.Session(server.target, config=proto), errors.explained()
    with block:
        for step in range(steps):
            value = session.run(total)
            print(f"step {step} {value[0]}", flush=True)
            time.sleep(0.05)
except Exception as error:  # report what the user would see
    cause = error.__cause__
    write({"type": type(error).__name__, "message": str(error), "raised_at": time.time(), "started": started,
           "cause": type(cause).__name__ if cause is not None else None,
           "attributes": [getattr(error, name, None) for name in ("rank_id", "rank_size", "timeout")]})
    print(f"{type(error).__name__}: {error}", flush=True)
    raise SystemExit(1)
write({"type": None, "steps": steps})
