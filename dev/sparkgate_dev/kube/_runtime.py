"""Container processes: started through the shim (``_container.py``) in a process group of their
own, found again by pid after a kubelet restart, signalled by group, and their memory limits
as cgroups."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHIM = Path(__file__).with_name("_container.py")


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): a pid and this name one process, even
    after the pid is reused. None when it no longer runs (or is a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


@dataclass
class ContainerProcess:
    """The shim of one container start; its pid is also the container's process group."""

    pid: int
    ticks: int
    exit_file: Path
    cgroup: Path | None = None
    podman_name: str | None = None  # the podman container it runs, if any
    popen: subprocess.Popen[bytes] | None = None  # None when adopted after a kubelet restart

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return start_ticks(self.pid) == self.ticks

    def signal(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)

    def exit_status(self) -> dict[str, Any]:
        """What the shim wrote when the process ended; killed with its shim (SIGKILL after
        the grace period), the process ended by SIGKILL too."""
        try:
            status: dict[str, Any] = json.loads(self.exit_file.read_text())
        except (OSError, ValueError):
            status = {"exitCode": 128 + signal.SIGKILL, "signal": int(signal.SIGKILL)}
        return status

    def record(self) -> dict[str, Any]:
        cgroup = str(self.cgroup) if self.cgroup else None
        return {
            "pid": self.pid,
            "ticks": self.ticks,
            "exitFile": str(self.exit_file),
            "cgroup": cgroup,
            "podmanName": self.podman_name,
        }

    @classmethod
    def adopt(cls, record: dict[str, Any]) -> ContainerProcess:
        cgroup = Path(record["cgroup"]) if record.get("cgroup") else None
        exit_file = Path(record["exitFile"])
        return cls(record["pid"], record["ticks"], exit_file, cgroup, record.get("podmanName"))


def launch(
    run_dir: Path,
    log_path: Path,
    spec: dict[str, Any],
    cgroup: Path | None,
    podman_name: str | None = None,
) -> ContainerProcess:
    """Start the shim for ``spec`` (argv, env, cwd, hostname, mounts, isolate, user, group)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    exit_file = run_dir / "exit.json"
    with contextlib.suppress(FileNotFoundError):
        exit_file.unlink()
    full = {
        **spec,
        "exit_file": str(exit_file),
        "cgroup_procs": [str(cgroup / "cgroup.procs")] if cgroup else [],
    }
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps(full))
    with open(log_path, "ab") as log:
        popen = subprocess.Popen(
            [sys.executable, "-I", "-S", str(SHIM), str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    ticks = start_ticks(popen.pid) or 0
    return ContainerProcess(popen.pid, ticks, exit_file, cgroup, podman_name, popen)


def memory_controller() -> tuple[int, Path] | None:
    """Where memory cgroups can be made: (2, the unified hierarchy's root) when it offers the
    memory controller, (1, this process's own v1 memory cgroup), or None."""
    unified = Path("/sys/fs/cgroup")
    if "memory" in _read(unified / "cgroup.controllers").split():
        return (2, unified) if os.access(unified, os.W_OK) else None
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "memory":
            own = unified / "memory" / path.lstrip("/")
            return (1, own) if os.access(own, os.W_OK) else None
    return None


class MemoryCgroups:
    """Memory limits: a cgroup per container start, under the kubelet's own memory cgroup
    (cgroup v1, as on this machine) or at the root of a cgroup v2 hierarchy that offers the
    memory controller. ``available`` is False where neither is writable."""

    def __init__(self, node: str) -> None:
        self.version = 0
        self.base: Path | None = None
        found = memory_controller()
        if found is None:
            return
        version, parent = found
        base = parent / f"sparkgate-kubelet-{node}"
        try:
            base.mkdir(exist_ok=True)
            if version == 2:
                (parent / "cgroup.subtree_control").write_text("+memory")
                (base / "cgroup.subtree_control").write_text("+memory")
        except OSError:
            return
        self.version, self.base = version, base

    @property
    def available(self) -> bool:
        return self.base is not None

    def create(self, name: str, limit_bytes: int) -> Path | None:
        if self.base is None:
            return None
        path = self.base / name
        path.mkdir(exist_ok=True)
        limit_file = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        (path / limit_file).write_text(str(limit_bytes))
        return path

    def oom_killed(self, path: Path) -> bool:
        events = "memory.events" if self.version == 2 else "memory.oom_control"
        for line in _read(path / events).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value) > 0
        return False

    def remove(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.rmdir()

    def remove_base(self) -> None:
        if self.base is not None:
            for child in self.base.iterdir():
                if child.is_dir():
                    self.remove(child)
            self.remove(self.base)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
