"""The local addresses of this process's own listening TCP sockets (its fds' socket inodes matched
in /proc/net/tcp and tcp6), as "address:port" strings; other processes' sockets are not counted."""
import os

from npurun.distribute.exposure import _ipv4, _ipv6


def own_listening():
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for name, decode in (("tcp", _ipv4), ("tcp6", _ipv6)):
        with open(f"/proc/net/{name}") as handle:
            for line in handle.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    address, _, port = fields[1].partition(":")
                    found.append(f"{decode(address)}:{int(port, 16)}")
    return sorted(found)
