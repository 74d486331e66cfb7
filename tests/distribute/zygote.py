"""Test helper: import TensorFlow once, then fork one process per rank and run a worker script in each.

Why: on this 2-core machine importing TensorFlow takes 6-15 s per process; forking after the
import (before any TensorFlow runtime, session or server exists) gives every rank its own process,
runtime and gRPC server at the cost of one import. Production launches (`npurun launch`) start
fresh interpreters instead.

argv[1]: a JSON file: {"ranks": [{"name", "env", "argv"}...], "dir": where to write
<name>.out / <name>.err, pids.json (name -> pid) and codes.json (name -> exit code)}.
"""
import json
import os
import runpy
import sys
import traceback

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow  # noqa: E402  (the point of this process)

assert tensorflow.__version__  # imported for its side effects; also keeps pyflakes quiet

spec = json.loads(open(sys.argv[1]).read())
out = spec["dir"]
pids = {}
for rank in spec["ranks"]:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.environ.update(rank["env"])
            for stream, suffix in ((1, "out"), (2, "err")):
                fd = os.open(os.path.join(out, f"{rank['name']}.{suffix}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, stream)
            sys.argv = list(rank["argv"])
            sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    pids[rank["name"]] = pid
with open(os.path.join(out, "pids.json"), "w") as handle:
    json.dump(pids, handle)
codes = {}
for name, pid in pids.items():
    status = os.waitpid(pid, 0)[1]
    codes[name] = os.waitstatus_to_exitcode(status)
with open(os.path.join(out, "codes.json"), "w") as handle:
    json.dump(codes, handle)
