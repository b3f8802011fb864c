"""Who listens where, read from Linux's /proc (no psutil): the sockets a process holds and
the TCP sockets that listen, matched by their inode."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


@dataclass(frozen=True)
class Listener:
    address: str  # as /proc/net/tcp* writes it: hex, in the kernel's byte order
    port: int
    inode: str


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process ``pid`` holds. OSError if its fds cannot be listed
    (gone, or another user's)."""
    inodes = set()
    for fd in list(Path(f"/proc/{pid}/fd").iterdir()):
        try:
            target = os.readlink(fd)
        except OSError:
            # Closed since it was listed: a JVM opens and closes files all the time, and
            # one such fd must not hide the sockets the process does hold.
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listeners() -> list[Listener]:
    """Every listening TCP socket of this machine's network namespace (IPv4 and IPv6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port = fields[1].rsplit(":", 1)
            if fields[3] == _LISTEN:
                found.append(Listener(address, int(port, 16), fields[9]))
    return found
