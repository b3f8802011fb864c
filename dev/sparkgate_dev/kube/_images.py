"""Images without a registry. A "local image" is the host's own filesystem with an entrypoint,
a command and environment variables, declared in a JSON file the test kubelet re-reads at every
container start:

    {"images": {"python": {"entrypoint": ["/usr/bin/python3"], "cmd": [], "env": {},
                           "workingDir": "/"}}}

An image absent from the file but in podman's local storage runs with podman."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sparkgate_dev.kube._podman import image_exists


@dataclass(frozen=True)
class Image:
    name: str
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = "/"
    podman: bool = False  # run with podman (an image of its local storage)

    def argv(self, command: list[str] | None, args: list[str] | None) -> list[str]:
        """Kubernetes' rule: ``command`` replaces the entrypoint (and drops the image's cmd),
        ``args`` replace the cmd."""
        if command:
            return [*command, *(args or [])]
        return [*self.entrypoint, *(args if args else self.cmd)]


def _candidates(name: str) -> list[str]:
    bare = name.removesuffix(":latest")
    return [name, bare, f"{bare}:latest"]


def read_local_images(path: Path | None) -> dict[str, Image]:
    if path is None or not path.exists():
        return {}
    declared = json.loads(path.read_text()).get("images", {})
    return {
        name: Image(
            name=name,
            entrypoint=list(spec.get("entrypoint", [])),
            cmd=list(spec.get("cmd", [])),
            env={str(k): str(v) for k, v in spec.get("env", {}).items()},
            working_dir=spec.get("workingDir") or "/",
        )
        for name, spec in declared.items()
    }


def write_local_images(path: Path, images: dict[str, Image]) -> None:
    declared = {
        image.name: {
            "entrypoint": image.entrypoint,
            "cmd": image.cmd,
            "env": image.env,
            "workingDir": image.working_dir,
        }
        for image in images.values()
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"images": declared}, indent=2))
    tmp.replace(path)


def find_image(images_file: Path | None, name: str, podman: str | None) -> Image | None:
    local = read_local_images(images_file)
    for candidate in _candidates(name):
        if candidate in local:
            return local[candidate]
    if image_exists(podman, name):
        return Image(name=name, podman=True)
    return None
