"""Containers of images in podman's local storage (no registry: what ``podman build`` or
``podman import`` made here). The pod's network is the host's (``--network=host``: the pod's
address is a local one, as for local images), its /etc/hosts, volumes and token are bind
mounts, its memory limit podman's. The kubelet's shim runs ``podman run`` as the container's
process, so signals, exit codes and logs go through podman the same way."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sparkgate_dev.kube._volumes import Mount


def find_podman(explicit: str | None) -> str | None:
    return explicit or shutil.which("podman")


def image_exists(podman: str | None, image: str) -> bool:
    if podman is None:
        return False
    done = subprocess.run(
        [podman, "image", "exists", image], capture_output=True, timeout=60, check=False
    )
    return done.returncode == 0


def run_argv(
    podman: str,
    name: str,
    image: str,
    *,
    command: list[str] | None,
    args: list[str] | None,
    env_file: Path,
    env: dict[str, str],
    mounts: list[Mount],
    hostname: str,
    working_dir: str | None,
    user: int | None,
    group: int | None,
    memory_bytes: int | None,
) -> list[str]:
    """``podman run`` for one container start. Kubernetes' rule: ``command`` replaces the
    image's entrypoint (and its cmd), ``args`` replace the cmd."""
    env_file.write_text("".join(f"{key}={value}\n" for key, value in env.items()))
    env_file.chmod(0o600)  # secrets: not on a command line
    argv = [podman, "run", "--name", name, "--network=host", "--no-hosts", "--hostname", hostname]
    argv += ["--env-file", str(env_file)]
    for mount in mounts:
        argv += ["--volume", f"{mount.source}:{mount.target}{':ro' if mount.readonly else ''}"]
    if working_dir:
        argv += ["--workdir", working_dir]
    if user is not None:
        argv += ["--user", f"{user}:{group}" if group is not None else str(user)]
    if memory_bytes is not None:
        argv += ["--memory", str(memory_bytes)]
    if command:
        argv += ["--entrypoint", json.dumps(command)]
    return [*argv, image, *(args or [])]


def finish(podman: str, name: str) -> bool:
    """Remove an ended (or abandoned) container; whether it was OOM-killed."""
    oom = False
    with contextlib.suppress(subprocess.SubprocessError, OSError, ValueError):
        inspected = subprocess.run(
            [podman, "inspect", "--format", "{{json .State}}", name],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if inspected.returncode == 0:
            state: dict[str, Any] = json.loads(inspected.stdout)
            oom = bool(state.get("OOMKilled"))
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        subprocess.run(
            [podman, "rm", "--force", "--time", "0", name],
            capture_output=True,
            timeout=60,
            check=False,
        )
    return oom
