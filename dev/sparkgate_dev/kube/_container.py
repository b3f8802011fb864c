"""The test kubelet's container shim: ``python -I -S _container.py SPEC`` (standard library only,
run by path so it starts fast and sees no site packages).

It joins the container's cgroups, enters a mount and UTS namespace of its own (bind mounts
of the pod's volumes, /etc/hosts and the service-account token over the host's filesystem;
hostname = the pod's name), forks the container's process and waits for it. Like a container
runtime's monitor it outlives the kubelet: it writes the exit status to a file the kubelet reads
(after a restart too) and, as a container's end would, kills what the process left in its group.
It ignores SIGTERM and SIGINT itself: the kubelet signals the whole process group, and the
container's process decides.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_exit(path: str, status: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as out:
        json.dump({**status, "finishedAt": _now()}, out)
    os.replace(tmp, path)


def _bind(source: str, target: str, readonly: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    elif not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        Path(target).touch()
    _check(libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), target)
    if readonly:
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC
        _check(libc.mount(None, target.encode(), None, flags, None), f"read-only {target}")


def _isolate(spec: dict[str, Any]) -> None:
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWUTS), "unshare")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "private /")
    name = spec["hostname"].encode()
    _check(libc.sethostname(name, len(name)), "sethostname")
    # Parents before children: a volume mounted inside another volume's path stays visible.
    for mount in sorted(spec["mounts"], key=lambda m: m["target"].count("/")):
        _bind(mount["source"], mount["target"], mount["readonly"])


def _exec(spec: dict[str, Any], errors: int) -> None:
    """In the forked child: become the container's process, or report why not on ``errors``."""
    try:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        if spec.get("group") is not None:
            os.setgroups([])
            os.setgid(spec["group"])
        if spec.get("user") is not None:
            os.setuid(spec["user"])
        os.chdir(spec["cwd"])
        os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
    except OSError as exc:
        os.write(errors, f"{spec['argv'][0]}: {exc}".encode())
    os._exit(128)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    exit_file = spec["exit_file"]
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN)
    try:
        for procs in spec["cgroup_procs"]:
            Path(procs).write_text(str(os.getpid()))
        if spec["isolate"]:
            _isolate(spec)
    except OSError as exc:
        _write_exit(
            exit_file, {"exitCode": 128, "reason": "CreateContainerError", "message": str(exc)}
        )
        sys.exit(128)
    read_errors, write_errors = os.pipe()  # close-on-exec: EOF says the exec succeeded
    pid = os.fork()
    if pid == 0:
        os.close(read_errors)
        _exec(spec, write_errors)
    os.close(write_errors)
    with os.fdopen(read_errors, "rb") as pipe:
        start_error = pipe.read().decode(errors="replace")  # empty: the exec succeeded
    _, wait_status = os.waitpid(pid, 0)
    if start_error:
        status = {"exitCode": 128, "reason": "StartError", "message": start_error}
    elif os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        status = {"exitCode": 128 + number, "signal": number}
    else:
        status = {"exitCode": os.WEXITSTATUS(wait_status)}
    _write_exit(exit_file, status)
    os.killpg(0, signal.SIGKILL)  # what the process left behind ends with it (and so does this)


if __name__ == "__main__":
    main()
