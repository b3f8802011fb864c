"""Daemons of the local cluster: one process group each, its output in a log file, stopped by
its pid (never by name), and free loopback ports for them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(
    check: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    last: Callable[[], object] | None = None,
) -> None:
    """Poll ``check`` until it holds; ``TimeoutError`` naming ``what`` (and what ``last``
    says was seen last) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            seen = f" (last: {last()})" if last else ""
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}{seen}")
        time.sleep(interval)


class Daemon:
    """One long-running process of the cluster, in a process group of its own."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stop_timeout: float = 20.0,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.stop_timeout = stop_timeout
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Daemon:
        if self.running:
            raise RuntimeError(f"{self.name} already runs as pid {self.pid}")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_running(self) -> None:
        """Raise with the end of its log if it exited (a daemon that should be up is not)."""
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with {self.process.returncode}; its log ends:\n{self.log()}"
            )

    def log(self, size: int = 4000) -> str:
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-size:]

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after its stop timeout; reaped either way."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.process = None
