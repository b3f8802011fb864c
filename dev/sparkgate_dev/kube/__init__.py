"""A local Kubernetes for tests: the real control plane (``controlplane``) and test kubelets
(``kubelet``) whose pods run as local processes, images being the host's filesystem.

    with Cluster(tmp_path / "kube") as cluster:
        cluster.add_local_image("python", [sys.executable])
        cluster.core().create_namespaced_pod("default", pod)
        cluster.wait_pod("default", "web", lambda p: p.status.phase == "Running")

It is the most real Kubernetes these machines allow: the API server, RBAC, the controllers
and the API are Kubernetes' own (1.20); the node is a stand-in (no container images, no CNI:
pods share the host's filesystem and network, each with an address of its own in 10.244.N.0/24
routed locally; Service names resolve through each pod's /etc/hosts; ClusterIPs, routed
locally too, are relayed to ready endpoints by the kubelets, so the host reaches them as well).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sparkgate_dev.kube._images import Image, read_local_images, write_local_images
from sparkgate_dev.kube._process import Daemon, wait_for
from sparkgate_dev.kube.controlplane import (
    SERVICE_CIDR,
    ControlPlane,
    ControlPlaneUnavailable,
    ensure_built,
)

__all__ = ["Cluster", "ControlPlane", "ControlPlaneUnavailable", "ensure_built"]

# podman with the settings sparkgate's image needs here (runc, no forced ulimits, a storage
# driver that works): the kubelets run images of podman's local storage with it.
PODMAN = Path(__file__).resolve().parents[3] / "deploy" / "image" / "podman"


class Cluster:
    """A control plane and one test kubelet per name in ``nodes``, under ``work``; images not
    declared with ``add_local_image`` run with ``podman`` when in its local storage."""

    def __init__(
        self,
        work: Path,
        *,
        nodes: Sequence[str] = ("node-1",),
        kubelet_args: Sequence[str] = (),
        podman: Path | None = PODMAN,
    ) -> None:
        self.work = work
        self.plane = ControlPlane(work / "control-plane")
        self.images_file = work / "images.json"
        self.kubelets = {
            name: Daemon(
                f"kubelet {name}",
                [
                    sys.executable,
                    "-m",
                    "sparkgate_dev.kube.kubelet",
                    f"--kubeconfig={self.plane.kubeconfig}",
                    f"--node={name}",
                    f"--work={work / 'kubelets' / name}",
                    f"--images={self.images_file}",
                    f"--pod-cidr=10.244.{index + 1}.0/24",
                    f"--service-cidr={SERVICE_CIDR}",
                    *([f"--podman={podman}"] if podman and podman.exists() else []),
                    *kubelet_args,
                ],
                work / "logs" / f"kubelet-{name}.log",
                stop_timeout=30.0,
            )
            for index, name in enumerate(nodes)
        }
        self._client: k8s.ApiClient | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> Cluster:
        self.work.mkdir(parents=True, exist_ok=True)
        if not self.images_file.exists():
            write_local_images(self.images_file, {})
        try:
            self.plane.start(timeout)
            for name in self.kubelets:
                self.start_kubelet(name, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for kubelet in self.kubelets.values():
            kubelet.stop()
        if self._client is not None:
            self._client.close()  # type: ignore[no-untyped-call]
            self._client = None
        self.plane.stop()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start_kubelet(self, name: str = "node-1", timeout: float = 60.0) -> None:
        """Start (or start again) a node's kubelet and wait until its Node is Ready."""
        kubelet = self.kubelets[name]
        started_after = time.time()
        kubelet.start()

        def ready() -> bool:
            kubelet.check_running()
            try:
                node = self.core().read_node(name)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            conditions = node.status.conditions if node.status else None
            for condition in conditions or []:
                if condition.type == "Ready" and condition.status == "True":
                    beat = condition.last_heartbeat_time
                    return beat is not None and beat.timestamp() >= int(started_after)
            return False

        wait_for(ready, timeout=timeout, what=f"node {name} Ready", interval=0.2)

    def stop_kubelet(self, name: str = "node-1") -> None:
        """Stop a node's kubelet as a node shutdown would: its pods' processes end, the pods
        stay bound to the node until a kubelet runs there again."""
        self.kubelets[name].stop()

    def kill_kubelet(self, name: str = "node-1") -> None:
        """SIGKILL the kubelet alone: its pods' processes run on, for the next kubelet."""
        kubelet = self.kubelets[name]
        process = kubelet.process
        if process is not None:
            process.kill()
            process.wait(timeout=30)
        kubelet.process = None

    # -- clients ---------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig

    def api_client(self) -> k8s.ApiClient:
        """The cluster's shared admin client (closed by ``stop``)."""
        if self._client is None:
            self._client = self.plane.api_client()
        return self._client

    def core(self) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(self.api_client())

    def apps(self) -> k8s.AppsV1Api:
        return k8s.AppsV1Api(self.api_client())

    def rbac(self) -> k8s.RbacAuthorizationV1Api:
        return k8s.RbacAuthorizationV1Api(self.api_client())

    # -- images and pods -------------------------------------------------------------------

    def add_local_image(
        self,
        name: str,
        entrypoint: Sequence[str],
        env: dict[str, str] | None = None,
        *,
        cmd: Sequence[str] = (),
        working_dir: str = "/",
    ) -> None:
        """Declare an image the kubelets run from the host's filesystem (read at every
        container start: no restart needed)."""
        images = read_local_images(self.images_file)
        images[name] = Image(name, list(entrypoint), list(cmd), dict(env or {}), working_dir)
        write_local_images(self.images_file, images)

    def wait_pod(
        self,
        namespace: str,
        name: str,
        predicate: Callable[[k8s.V1Pod], bool],
        timeout: float = 60.0,
    ) -> k8s.V1Pod:
        """The pod once ``predicate`` holds for it (a missing pod does not)."""
        found: list[k8s.V1Pod] = []

        def holds() -> bool:
            with contextlib.suppress(ApiException):
                pod = self.core().read_namespaced_pod(name, namespace)
                found[:] = [pod]
                return bool(predicate(pod))
            return False

        wait_for(
            holds,
            timeout=timeout,
            what=f"pod {namespace}/{name}",
            interval=0.2,
            last=lambda: found[0].status if found else None,
        )
        return found[0]

    def wait_pod_gone(self, namespace: str, name: str, timeout: float = 60.0) -> None:
        def gone() -> bool:
            try:
                self.core().read_namespaced_pod(name, namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return True
                raise
            return False

        wait_for(gone, timeout=timeout, what=f"pod {namespace}/{name} to be deleted", interval=0.2)
