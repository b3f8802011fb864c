"""A pod's volumes on the host, and the bind mounts of a container.

ConfigMap, Secret, downward API, projected and service-account token volumes are written the
way a real kubelet writes them: the files live in a timestamped directory that the symlink
``..data`` names, each top-level name is a symlink through ``..data``, and an update swaps
``..data`` in one rename. A container's mount of the volume's directory therefore sees a
ConfigMap's new contents at once and never half of them (a ``subPath`` mount of one file keeps
the old contents, as on a real node)."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkgate_dev.kube._env import (
    ConfigError,
    Lookup,
    PodAddresses,
    data_of,
    expand,
    field_value,
    resource_value,
)

Obj = dict[str, Any]
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME = "kube-api-access-sparkgate"
# (namespace, service account, expiration seconds, audiences, pod) -> (token, expiry epoch)
TokenRequester = Callable[[str, str, int, list[str], Obj], tuple[str, float]]
Files = dict[str, tuple[bytes, int]]  # relative path -> (contents, mode)


class VolumeError(Exception):
    """A volume cannot be set up (yet): the pod's containers wait, as on ``FailedMount``."""


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    readonly: bool


def write_projection(target: Path, files: Files) -> bool:
    """Make ``target`` hold exactly ``files``, atomically; False when it already did."""
    target.mkdir(parents=True, exist_ok=True)
    data_link = target / "..data"
    if data_link.is_symlink() and _holds(data_link, files):
        return False
    stamp = target / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    stamp.mkdir(mode=0o755)
    for relative, (contents, mode) in files.items():
        path = stamp / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(contents)
        path.chmod(mode)
    old = os.readlink(data_link) if data_link.is_symlink() else None
    tmp_link = target / "..data_tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    tmp_link.symlink_to(stamp.name)
    tmp_link.replace(data_link)
    names = {relative.split("/", 1)[0] for relative in files}
    for entry in target.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.name not in names:
            entry.unlink()
    for name in names:
        link = target / name
        if not link.is_symlink():
            link.symlink_to(f"..data/{name}")
    if old:
        shutil.rmtree(target / old, ignore_errors=True)
    return True


def _holds(directory: Path, files: Files) -> bool:
    present = {
        str(path.relative_to(directory.resolve()))
        for path in directory.resolve().rglob("*")
        if path.is_file()
    }
    if present != set(files):
        return False
    for relative, (contents, mode) in files.items():
        path = directory / relative
        if path.read_bytes() != contents or path.stat().st_mode & 0o777 != mode:
            return False
    return True


class PodVolumes:
    """The volumes of one pod under ``<pod dir>/volumes``; ``sync`` creates them and refreshes
    the projected ones (call it again to pick up a changed ConfigMap or to renew tokens)."""

    def __init__(
        self,
        pod_dir: Path,
        *,
        lookup: Lookup,
        request_token: TokenRequester,
        ca_file: Path,
    ) -> None:
        self.root = pod_dir / "volumes"
        self.lookup = lookup
        self.request_token = request_token
        self.ca_file = ca_file
        self._tokens: dict[tuple[str, int, tuple[str, ...]], tuple[str, float, float]] = {}

    def volumes(self, pod: Obj) -> list[Obj]:
        volumes: list[Obj] = list(pod["spec"].get("volumes") or [])
        if wants_service_account_token(pod):
            volumes.append(
                {
                    "name": TOKEN_VOLUME,
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                            # The API server's CA, from the kubelet's own kubeconfig (a real
                            # kubelet projects the kube-root-ca.crt ConfigMap: same bytes).
                            {"sparkgateCA": {"path": "ca.crt"}},
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {"fieldPath": "metadata.namespace"},
                                        }
                                    ]
                                }
                            },
                        ]
                    },
                }
            )
        return volumes

    def sync(self, pod: Obj, addresses: PodAddresses) -> None:
        for volume in self.volumes(pod):
            try:
                self._sync_volume(pod, volume, addresses)
            except (ConfigError, OSError) as exc:
                raise VolumeError(f"volume {volume['name']!r}: {exc}") from exc

    def _sync_volume(self, pod: Obj, volume: Obj, addresses: PodAddresses) -> None:
        name = volume["name"]
        path = self.root / name
        if "emptyDir" in volume:
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)
        elif "hostPath" in volume:
            _host_path(volume["hostPath"])
        elif "configMap" in volume or "secret" in volume:
            files = self._object_files(pod, volume)
            write_projection(path, files)
        elif "downwardAPI" in volume:
            source = volume["downwardAPI"]
            mode = source.get("defaultMode", 0o644)
            write_projection(path, self._downward_files(pod, source, addresses, mode))
        elif "projected" in volume:
            write_projection(path, self._projected_files(pod, volume["projected"], addresses))
        else:
            kinds = sorted(set(volume) - {"name"})
            raise VolumeError(f"volume {name!r}: the test kubelet does not support {kinds}")

    def source_of(self, pod: Obj, name: str) -> Path:
        for volume in self.volumes(pod):
            if volume["name"] == name:
                if "hostPath" in volume:
                    return Path(volume["hostPath"]["path"])
                return self.root / name
        raise VolumeError(f"no volume named {name!r}")

    def mounts(self, pod: Obj, container: Obj, env: dict[str, str]) -> list[Mount]:
        projected = {
            volume["name"]
            for volume in self.volumes(pod)
            if {"configMap", "secret", "downwardAPI", "projected"} & set(volume)
        }
        mounts = []
        for mount in container.get("volumeMounts") or []:
            source = self.source_of(pod, mount["name"])
            sub_path = mount.get("subPath") or expand(mount.get("subPathExpr", ""), env)
            if sub_path:
                source = source / sub_path
                if mount["name"] in projected:
                    source = source.resolve()  # through ..data: the file, not the symlink
                elif not source.exists():
                    source.mkdir(parents=True, exist_ok=True)
            readonly = bool(mount.get("readOnly")) or mount["name"] in projected
            mounts.append(Mount(str(source), mount["mountPath"], readonly))
        if wants_service_account_token(pod) and not any(
            m.target.rstrip("/") == SERVICE_ACCOUNT_DIR for m in mounts
        ):
            mounts.append(Mount(str(self.root / TOKEN_VOLUME), SERVICE_ACCOUNT_DIR, True))
        return mounts

    # -- projected contents ----------------------------------------------------------------

    def _object_files(self, pod: Obj, volume: Obj) -> Files:
        kind = "configmaps" if "configMap" in volume else "secrets"
        source = volume["configMap"] if kind == "configmaps" else volume["secret"]
        ref = dict(source)
        ref.setdefault("name", source.get("secretName"))
        return self._keys_files(pod, kind, ref, source.get("defaultMode", 0o644))

    def _keys_files(self, pod: Obj, kind: str, ref: Obj, mode: int) -> Files:
        namespace = pod["metadata"].get("namespace", "default")
        obj = self.lookup(kind, namespace, ref["name"])
        if obj is None:
            if ref.get("optional"):
                return {}
            raise VolumeError(f'{kind.rstrip("s")} "{ref["name"]}" not found')
        data = data_of(kind, obj)
        items = ref.get("items")
        if not items:
            return {key: (value, mode) for key, value in data.items()}
        files: Files = {}
        for item in items:
            if item["key"] not in data:
                if ref.get("optional"):
                    continue
                raise VolumeError(f"key {item['key']!r} not in {kind} {ref['name']}")
            files[item["path"]] = (data[item["key"]], item.get("mode", mode))
        return files

    def _downward_files(self, pod: Obj, source: Obj, addresses: PodAddresses, mode: int) -> Files:
        files: Files = {}
        for item in source.get("items") or []:
            if "fieldRef" in item:
                value = field_value(pod, item["fieldRef"]["fieldPath"], addresses)
            else:
                ref = item["resourceFieldRef"]
                containers = pod["spec"]["containers"]
                container = next(
                    (c for c in containers if c["name"] == ref.get("containerName")), containers[0]
                )
                value = resource_value(container, ref)
            files[item["path"]] = (value.encode(), item.get("mode", mode))
        return files

    def _projected_files(self, pod: Obj, projected: Obj, addresses: PodAddresses) -> Files:
        mode = projected.get("defaultMode", 0o644)
        files: Files = {}
        for source in projected.get("sources") or []:
            if "configMap" in source:
                files.update(self._keys_files(pod, "configmaps", source["configMap"], mode))
            elif "secret" in source:
                files.update(self._keys_files(pod, "secrets", source["secret"], mode))
            elif "downwardAPI" in source:
                files.update(self._downward_files(pod, source["downwardAPI"], addresses, mode))
            elif "serviceAccountToken" in source:
                token_source = source["serviceAccountToken"]
                token = self._token(pod, token_source)
                files[token_source["path"]] = (token.encode(), mode)
            elif "sparkgateCA" in source:
                files[source["sparkgateCA"]["path"]] = (self.ca_file.read_bytes(), mode)
            else:
                raise VolumeError(f"unsupported projected source {sorted(source)}")
        return files

    def _token(self, pod: Obj, source: Obj) -> str:
        """A bound token of the pod's service account, renewed past 80% of its life."""
        expiration = int(source.get("expirationSeconds", 3600))
        audiences = [source["audience"]] if source.get("audience") else []
        key = (source["path"], expiration, tuple(audiences))
        cached = self._tokens.get(key)
        now = time.time()
        if cached and now < cached[2]:
            return cached[0]
        account = pod["spec"].get("serviceAccountName") or "default"
        namespace = pod["metadata"].get("namespace", "default")
        token, expires = self.request_token(namespace, account, expiration, audiences, pod)
        self._tokens[key] = (token, expires, now + 0.8 * (expires - now))
        return token


def wants_service_account_token(pod: Obj) -> bool:
    return pod["spec"].get("automountServiceAccountToken") is not False


def _host_path(source: Obj) -> None:
    path = Path(source["path"])
    kind = source.get("type", "")
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    elif kind == "Directory" and not path.is_dir():
        raise VolumeError(f"hostPath {path} is not a directory")
    elif kind == "File" and not path.is_file():
        raise VolumeError(f"hostPath {path} is not a file")
    elif kind in ("Socket", "CharDevice", "BlockDevice") and not path.exists():
        raise VolumeError(f"hostPath {path} does not exist")
