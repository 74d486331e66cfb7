"""Test helper: simulated hosts in Linux network namespaces that the test creates and removes.

`Hosts(n)` makes n "host" namespaces plus a "switch" namespace holding a bridge; host i has a veth
`eth0` on the bridge with the address 10.213.<net>.<i + 1>/24 and its own loopback. The addresses
exist only inside these namespaces (nothing is routed to or from the machine's own network), and
everything is deleted on `close()` (use it as a context manager), also the /etc/netns/<ns>/hosts
files `add_names` writes. Needs root and `ip`; `unavailable()`
gives the reason when namespaces cannot be made, for a printed skip.
"""
import os
import shutil
import signal
import subprocess

SUBNET = "10.213"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=check)


def unavailable():
    """None when network namespaces can be made here, else why not."""
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    name = f"npr26probe{os.getpid()}"
    done = _ip("netns", "add", name, check=False)
    if done.returncode != 0:
        return f"`ip netns add` failed: {done.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return None


class Hosts:
    def __init__(self, count, net=0):
        self.tag = f"npr26{os.getpid() % 100000}"
        self.switch = f"{self.tag}sw"
        self.names = [f"{self.tag}h{i}" for i in range(count)]
        self.addresses = [f"{SUBNET}.{net}.{i + 1}" for i in range(count)]
        self.procs = []
        self.made = []
        self.etc_dirs = []
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    def _make(self):
        for name in [self.switch, *self.names]:
            _ip("netns", "add", name)
            self.made.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i, (name, address) in enumerate(zip(self.names, self.addresses)):
            # both ends are created inside the switch namespace, then one moves to the host's
            _ip("-n", self.switch, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0", "netns", name)
            _ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")

    def popen(self, host, argv, **kwargs):
        """A process in host `host`'s namespace (its own process group, killed on close)."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.names[host], *argv], start_new_session=True, **kwargs)
        self.procs.append(proc)
        return proc

    def run(self, host, argv, timeout=60):
        return subprocess.run(["ip", "netns", "exec", self.names[host], *argv], capture_output=True, text=True,
                              timeout=timeout)

    def add_names(self, names):
        """Make `names` ({DNS name: address}) resolvable inside every host namespace, as a cluster DNS
        does: `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts (removed on close)."""
        lines = "127.0.0.1 localhost\n" + "".join(f"{address} {name}\n" for name, address in names.items())
        if not os.path.isdir("/etc/netns"):
            os.mkdir("/etc/netns")
            self.etc_dirs.append("/etc/netns")  # removed last, when empty
        for name in self.names:
            folder = os.path.join("/etc/netns", name)
            os.makedirs(folder, exist_ok=False)
            self.etc_dirs.append(folder)
            with open(os.path.join(folder, "hosts"), "w") as handle:
                handle.write(lines)

    def set_link(self, host, up):
        _ip("-n", self.switch, "link", "set", f"p{host}", "up" if up else "down")

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        for name in reversed(self.made):
            _ip("netns", "del", name, check=False)
        self.made = []
        for folder in reversed(self.etc_dirs):
            if folder == "/etc/netns":
                try:
                    os.rmdir(folder)
                except OSError:
                    pass  # another user's namespace files are there
            else:
                shutil.rmtree(folder, ignore_errors=True)
        self.etc_dirs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
