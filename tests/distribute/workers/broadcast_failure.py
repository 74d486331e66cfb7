"""NPUBroadcastGlobalVariablesHook whose root rank dies after the start-up barrier.

Both ranks build a variable and NPUBroadcastGlobalVariablesHook(root_rank=1) with hccl_timeout=3
(`settings.use`), on a plain session on this rank's server. Rank 1 (the root) passes the start-up
(StartupHook) and exits 1 s later without broadcasting; rank 0 runs the broadcast hook's
after_create_session, whose broadcast then loses its root. Rank 0 writes rank0.json: the type,
message and cause type of the error its hook raised.
"""
import os
import time

from common import RANK, tf, write

from npurun.distribute import cluster, settings
from npurun.distribute.hooks import NPUBroadcastGlobalVariablesHook, StartupHook

v1 = tf.compat.v1
with settings.use(hccl_timeout=3):
    variable = v1.get_variable("v", initializer=tf.constant([float(RANK)] * 4))
    hook, startup = NPUBroadcastGlobalVariablesHook(root_rank=1), StartupHook()
    hook.begin()
    startup.begin()
    init = v1.global_variables_initializer()
proto = cluster.configure()
server = cluster.ensure_server(proto)
session = v1.Session(server.target, config=proto)
session.run(init)
if RANK == 1:
    startup.after_create_session(session, None)  # the shared start-up barrier, then leave
    time.sleep(1.0)
    os._exit(0)
try:
    hook.after_create_session(session, None)
except Exception as error:
    cause = error.__cause__
    write({"type": type(error).__name__, "message": str(error),
           "cause": type(cause).__name__ if cause is not None else None})
    raise SystemExit(1)
write({"type": None, "value": session.run(variable)})
