"""The one liveness check on recorded pids: a running process is alive; an exited one, reaped
or still a zombie of ours, is not; no pid is not."""

from __future__ import annotations

import subprocess
import sys

from sparkgate.processes import alive
from sparkgate_dev import eventually


def test_a_running_process_is_alive_and_its_zombie_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        assert alive(child.pid)
        assert child.stdin is not None
        child.stdin.close()  # it exits; unreaped, it stays a zombie
        eventually(lambda: not alive(child.pid), timeout=30, what="the child to exit")
        assert child.poll() == 0  # it was a zombie, not reaped behind our back
    finally:
        child.kill()
        child.wait()
    assert not alive(child.pid)


def test_no_pid_is_not_alive() -> None:
    assert not alive(None)
    assert not alive(0)
