"""bind_narrow's LD_PRELOAD shim: a wildcard bind becomes a bind of NPURUN_BIND_ADDRESS (port 0
still ephemeral), other binds pass through; the library is built into an owner-only cache folder
and never written through a planted link. Each case is one small python subprocess (no TensorFlow)."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from npurun.distribute import bind_narrow

PROBE = """
import ctypes, json, socket
from npurun.distribute import bind_narrow
result = {"active": bind_narrow.active()}
for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0"), (socket.AF_INET, "127.0.0.2")):
    s = socket.socket(family)
    s.bind((address, 0))
    s.listen()
    result[address] = list(s.getsockname()[:2])
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


def probe(cache, **env_more):
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    env.pop(bind_narrow.ADDRESS_ENV, None)
    env.pop(bind_narrow.ANY_ENV, None)
    env.update(env_more)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def preloaded(cache, address, **env_more):
    env = dict(os.environ, XDG_CACHE_HOME=cache, **env_more)
    assert bind_narrow.preload_env(address, env), "no C compiler (cc/gcc) to build the shim"
    return probe(cache, **{k: env[k] for k in ("LD_PRELOAD", bind_narrow.ADDRESS_ENV)}, **env_more)


def test_wildcard_binds_become_the_job_address_and_others_pass_through(cache, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", cache)
    got = preloaded(cache, "127.0.0.1")
    assert got["active"] is True
    assert got["::"][0] == "::ffff:127.0.0.1" and got["0.0.0.0"][0] == "127.0.0.1"
    assert got["::"][1] > 0 and got["0.0.0.0"][1] > 0  # port 0 still gets an ephemeral port
    assert got["127.0.0.2"][0] == "127.0.0.2"  # a named address is left alone
    folder = os.path.join(cache, "npurun")
    assert oct(os.stat(folder).st_mode & 0o777) == "0o700"
    # without the preload (and with the opt-out), the wildcard stays
    plain = probe(cache)
    assert plain["active"] is False and plain["::"][0] == "::" and plain["0.0.0.0"][0] == "0.0.0.0"
    opted_out = probe(cache, LD_PRELOAD=bind_narrow.library_path(), NPURUN_BIND_ADDRESS="127.0.0.1",
                      NPURUN_BIND_ANY="1")
    assert opted_out["active"] is False and opted_out["::"][0] == "::"


def test_the_library_is_not_written_through_a_planted_link(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    os.makedirs(tmp_path / "npurun", mode=0o700)
    with open(bind_narrow._SOURCE, "rb") as handle:
        name = f"bind-{hashlib.sha256(handle.read()).hexdigest()[:16]}.so"
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "npurun" / name)
    assert bind_narrow.library_path() is None
    assert victim.read_text() == "keep" and os.path.islink(tmp_path / "npurun" / name)
    assert not [n for n in os.listdir(tmp_path / "npurun") if n != name]  # no temporary left behind
