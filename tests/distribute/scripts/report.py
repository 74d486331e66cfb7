"""Launcher test script (no TensorFlow): print the rank environment; behave as argv says.

argv: MODE [SECONDS]. MODE: ok (exit 0), exit3 (every rank exits 3 at once), fail1 (rank 1 exits 3 after SECONDS, others sleep 60),
ps_serves (ps tasks sleep forever, ranks exit 0 after 2 s), sleep (sleep 60), preempted (rank 1 exits
143 at once, rank 0 after SECONDS: an orderly preemption), killed1 (rank 1 kills itself with
SIGTERM's default action, others sleep 60).
"""
import json
import os
import sys
import time

mode = sys.argv[1]
config = json.loads(os.environ["TF_CONFIG"])
print(f"RANK_ID={os.environ.get('RANK_ID', '')} RANK_SIZE={os.environ['RANK_SIZE']} "
      f"HCCL_CONNECT_TIMEOUT={os.environ.get('HCCL_CONNECT_TIMEOUT', '')}", flush=True)
print("TF_CONFIG=" + json.dumps(config), flush=True)
print(f"NPURUN_FEED_PORT={os.environ.get('NPURUN_FEED_PORT', '')}", flush=True)
print(f"pid={os.getpid()}", flush=True)
print("to stderr", file=sys.stderr, flush=True)
task = config["task"]
if mode == "exit3":
    sys.exit(3)
if mode == "preempted":
    time.sleep(float(sys.argv[2]) if task["index"] == 0 else 0)
    print(f"NPURUN_LAUNCHED={os.environ.get('NPURUN_LAUNCHED')}", flush=True)
    sys.exit(143)
if mode == "killed1" and task["index"] == 1:
    import signal

    os.kill(os.getpid(), signal.SIGTERM)
if mode == "fail1" and task == {"type": "worker", "index": 1}:
    time.sleep(float(sys.argv[2]))
    print("rank 1 fails now", flush=True)
    sys.exit(3)
if mode in ("fail1", "sleep", "killed1") or (mode == "ps_serves" and task["type"] == "ps"):
    time.sleep(60)
if mode == "ps_serves":
    # Give the ps task (started with the ranks) time to print its environment before the ranks
    # finish and the launcher stops it: otherwise the test races the ps interpreter's start-up.
    time.sleep(2)
