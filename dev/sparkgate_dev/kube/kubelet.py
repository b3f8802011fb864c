"""A test kubelet: one node of the local control plane, whose pods' containers run as local
processes (the host's filesystem is every local image's root).

    python -m sparkgate_dev.kube.kubelet --kubeconfig F --node NAME --work DIR --images FILE

It is the scheduler too: it binds every unscheduled pod whose nodeSelector its node matches.
It registers its Node (Ready, its address, the port of its log endpoint) and renews its status
and Lease. Each pod gets an address of its own from the node's pod CIDR (10.244.1.0/24 by
default), which the kubelet routes locally as 127/8 is (see ``route_locally``), an /etc/hosts
that names the pod and every Service (in place of cluster DNS), its volumes and its service
account's token. ClusterIPs work as well: the kubelet relays them to ready endpoints
(``_proxy``). Each container is a process group in a mount and UTS namespace of its own, with
a memory cgroup when it has a memory limit. Deletion honours the grace period (SIGTERM,
SIGKILL, then the pod is deleted with grace 0), probes and restart policies act as in
Kubernetes, logs are served to the API server. On SIGTERM the kubelet stops its pods'
processes and exits; a later kubelet on the same work directory carries on (pods deleted
meanwhile are cleaned up, leftover processes killed, running ones adopted).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import logging
import os
import platform
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from sparkgate_dev.kube._api import ApiError, Informer, KubeApi, Obj, informers
from sparkgate_dev.kube._env import ConfigError
from sparkgate_dev.kube._logserver import LogNotFound, LogServer, LogSource, serving_certificate
from sparkgate_dev.kube._pod import NodeContext, PodWorker
from sparkgate_dev.kube._podman import find_podman
from sparkgate_dev.kube._proxy import ServiceProxy, service_backends
from sparkgate_dev.kube._runtime import MemoryCgroups
from sparkgate_dev.kube._status import now_iso

log = logging.getLogger("kubelet")
VERSION = "v1.20.2-sparkgate"
SERVICE_DOMAIN = "svc.cluster.local"


def hosts_file(pod: Obj, pod_ip: str, services: list[Obj], endpoints: list[Obj]) -> str:
    """A pod's /etc/hosts, standing in for cluster DNS: the pod itself and every Service, as
    ``svc`` (in the pod's namespace), ``svc.ns``, ``svc.ns.svc`` and ``svc.ns.svc.cluster.local``,
    at its ClusterIP or, for a headless Service, at its ready endpoints' addresses."""
    namespace = pod["metadata"].get("namespace", "default")
    hostname = pod["spec"].get("hostname") or pod["metadata"]["name"]
    lines = [
        "# Kubernetes-managed hosts file (sparkgate test kubelet).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
    ]
    own = [hostname]
    if pod["spec"].get("subdomain"):
        own.insert(0, f"{hostname}.{pod['spec']['subdomain']}.{namespace}.{SERVICE_DOMAIN}")
    lines.append(f"{pod_ip}\t{' '.join(own)}")
    ready = {(e["metadata"]["namespace"], e["metadata"]["name"]): e for e in endpoints}

    def key(obj: Obj) -> tuple[str, str]:
        return obj["metadata"]["namespace"], obj["metadata"]["name"]

    for service in sorted(services, key=key):
        service_ns, name = key(service)
        aliases = [f"{name}.{service_ns}", f"{name}.{service_ns}.svc"]
        aliases.append(f"{name}.{service_ns}.{SERVICE_DOMAIN}")
        if service_ns == namespace:
            aliases.insert(0, name)
        cluster_ip = (service.get("spec") or {}).get("clusterIP")
        if cluster_ip and cluster_ip != "None":
            lines.append(f"{cluster_ip}\t{' '.join(aliases)}")
            continue
        seen = set()
        for subset in (ready.get(key(service)) or {}).get("subsets") or []:
            for address in subset.get("addresses") or []:
                ip = address["ip"]
                if address.get("hostname"):
                    fqdn = f"{address['hostname']}.{name}.{service_ns}.{SERVICE_DOMAIN}"
                    lines.append(f"{ip}\t{fqdn}")
                if ip not in seen:
                    seen.add(ip)
                    lines.append(f"{ip}\t{' '.join(aliases)}")
    return "\n".join(lines) + "\n"


def selector_matches(pod: Obj, labels: dict[str, str]) -> bool:
    selector = pod["spec"].get("nodeSelector") or {}
    return all(labels.get(key) == value for key, value in selector.items())


class AddressPool:
    """Pod addresses from the node's pod CIDR, handed out round-robin so that a new pod does
    not get the address an old pod's clients may still be talking to."""

    def __init__(self, cidr: str, state_file: Path) -> None:
        self.network = ipaddress.ip_network(cidr)
        self.state_file = state_file
        self.next = 0
        if state_file.exists():
            self.next = json.loads(state_file.read_text())["next"]

    def allocate(self, in_use: set[str]) -> str:
        hosts = list(self.network.hosts())
        for _ in range(len(hosts)):
            index, self.next = self.next % len(hosts), (self.next + 1) % len(hosts)
            address = str(hosts[index])
            if address not in in_use:
                self.state_file.write_text(json.dumps({"next": self.next}))
                return address
        raise RuntimeError(f"no free pod address left in {self.network}")


def route_locally(cidr: str) -> None:
    """Make every address of ``cidr`` local, as all of 127/8 is: a pod's processes bind its
    address without port clashes with other pods and reach the host's services on 127.0.0.1.
    (Pods cannot simply live on 127/8: the API server refuses loopback addresses in
    Endpoints.) The route stays after the kubelet: others may use it, and it is harmless."""
    done = subprocess.run(
        ["ip", "route", "replace", "local", cidr, "dev", "lo", "table", "local"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"cannot route {cidr} locally (the test kubelet needs root and iproute2): "
            f"{done.stderr.strip()}"
        )


class Kubelet:
    def __init__(
        self,
        api: KubeApi,
        *,
        node: str,
        work: Path,
        images: Path | None,
        host_ip: str = "127.0.0.1",
        pod_cidr: str = "10.244.1.0/24",
        service_cidr: str = "10.96.0.0/24",
        port: int = 0,
        labels: dict[str, str] | None = None,
        backoff_base: float = 1.0,
        backoff_cap: float = 20.0,
        heartbeat: float = 10.0,
        stop_grace: float = 10.0,
        keep_pods_on_exit: bool = False,
        podman: str | None = None,
    ) -> None:
        self.api = api
        self.node = node
        self.work = work
        self.host_ip = host_ip
        self.labels = {
            "kubernetes.io/hostname": node,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            **(labels or {}),
        }
        self.heartbeat_interval = heartbeat
        self.stop_grace = stop_grace
        self.keep_pods_on_exit = keep_pods_on_exit
        self.pods_dir = work / "pods"
        self.pods_dir.mkdir(parents=True, exist_ok=True)
        self.pod_cidr = pod_cidr
        self.service_cidr = service_cidr
        self.proxy = ServiceProxy()
        self.addresses = AddressPool(pod_cidr, work / "addresses.json")
        self.stopping = threading.Event()
        self._wake = threading.Event()
        self.workers: dict[str, PodWorker] = {}
        self._informers: dict[str, Informer] = {}
        self._registered_at = now_iso()
        cert, key = serving_certificate(work / "tls", host_ip, node)
        self.log_server = LogServer(host_ip, port, cert, key, self._log_source)
        api_url = urlsplit(api.server)
        api_port = api_url.port or 443
        self.api_server = (api_url.hostname or "127.0.0.1", api_port)
        self.cgroups = MemoryCgroups(node)
        if not self.cgroups.available:
            log.warning("no writable memory cgroup: memory limits are not enforced")
        self.ctx = NodeContext(
            api=api,
            host_ip=host_ip,
            api_port=api_port,
            ca_file=api.ca_file or Path("/etc/ssl/certs/ca-certificates.crt"),
            images_file=images,
            podman=find_podman(podman),
            cgroups=self.cgroups,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            wake=self.wake,
            hosts_for=self._hosts_for,
            lookup=self._lookup,
        )

    def wake(self, _kind: str = "") -> None:
        self._wake.set()

    # -- the main loop ---------------------------------------------------------------------

    def run(self) -> None:
        """Until ``stopping`` is set (the process's SIGTERM), then stop the pods' processes
        (unless ``keep_pods_on_exit``) and mark the node not ready."""
        route_locally(self.pod_cidr)
        route_locally(self.service_cidr)
        self.proxy.start()
        self.log_server.start()
        heartbeat = threading.Thread(target=self._heartbeats, name="heartbeat", daemon=True)
        paths = ["/api/v1/pods", "/api/v1/services", "/api/v1/endpoints"]
        paths += ["/api/v1/configmaps", "/api/v1/secrets"]
        try:
            self._until_done(self._register_node, "registering the node")
            self._recover()
            with informers(self.api, paths, self.wake) as started:
                self._informers = started
                while not started["pods"].synced.wait(0.5):
                    if self.stopping.is_set():
                        return
                heartbeat.start()
                log.info(
                    "node %s ready; logs on %s:%s", self.node, self.host_ip, self.log_server.port
                )
                while not self.stopping.is_set():
                    self._wake.wait(0.5)
                    self._wake.clear()
                    self._sync()
                if not self.keep_pods_on_exit:
                    self._stop_pods()
        finally:
            self.log_server.stop()
            self.proxy.stop()
            if heartbeat.is_alive():
                heartbeat.join(timeout=5)
            self._mark_not_ready()
            if not self.keep_pods_on_exit:
                self.cgroups.remove_base()

    def _until_done(self, step: Callable[[], None], what: str) -> None:
        while not self.stopping.is_set():
            try:
                step()
                return
            except Exception as exc:
                log.info("%s: %s; retrying", what, exc)
                self.stopping.wait(1.0)

    def _sync(self) -> None:
        backends = service_backends(
            self._cached("services"), self._cached("endpoints"), self.api_server
        )
        self.proxy.update(backends)
        pods = self._informers["pods"].items()
        self._schedule(pods)
        mine = {
            pod["metadata"]["uid"]: pod for pod in pods if pod["spec"].get("nodeName") == self.node
        }
        for uid, pod in mine.items():
            if uid not in self.workers:
                self._admit(pod)
        for uid, worker in list(self.workers.items()):
            try:
                done = worker.sync(mine.get(uid))
            except Exception:
                log.exception("pod %s/%s", worker.namespace, worker.name)
                continue
            if done:
                del self.workers[uid]

    def _admit(self, pod: Obj) -> None:
        """A pod bound here that runs nowhere yet (or any more)."""
        meta = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp"):
            # Nothing of it runs here: it can go at once.
            with contextlib.suppress(Exception):
                self.api.delete(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}},
                )
            return
        if phase in ("Succeeded", "Failed"):
            return  # finished before this kubelet's time: it stays as it ended
        if pod["spec"].get("hostNetwork"):
            ip = self.host_ip
        else:
            ip = self.addresses.allocate({w.ip for w in self.workers.values()})
        pod_dir = self.pods_dir / meta["uid"]
        pod_dir.mkdir(parents=True, exist_ok=True)
        worker = PodWorker(self.ctx, pod_dir, pod, ip)
        worker.save()
        self.workers[meta["uid"]] = worker
        log.info("pod %s/%s admitted at %s", meta["namespace"], meta["name"], ip)

    def _schedule(self, pods: list[Obj]) -> None:
        for pod in pods:
            spec, meta = pod["spec"], pod["metadata"]
            if spec.get("nodeName") or meta.get("deletionTimestamp"):
                continue
            if spec.get("schedulerName", "default-scheduler") != "default-scheduler":
                continue
            if not selector_matches(pod, self.labels):
                continue
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"], "uid": meta["uid"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
            }
            try:
                self.api.post(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", binding
                )
            except ApiError as exc:
                if exc.status not in (404, 409):
                    log.info("binding %s/%s: %s", meta["namespace"], meta["name"], exc)
            except Exception as exc:
                log.info("binding %s/%s: %s", meta["namespace"], meta["name"], exc)

    def _recover(self) -> None:
        """Pods a previous kubelet left in the work directory; the first sync (after the pods
        are listed) kills and cleans up those deleted meanwhile."""
        for state in sorted(self.pods_dir.glob("*/state.json")):
            try:
                worker = PodWorker.load(self.ctx, state.parent)
            except (OSError, ValueError, KeyError) as exc:
                log.warning("unreadable pod record %s: %s", state, exc)
                continue
            self.workers[worker.uid] = worker
            log.info("pod %s/%s recovered", worker.namespace, worker.name)

    def _stop_pods(self) -> None:
        for worker in self.workers.values():
            worker.begin_shutdown(self.stop_grace)
        while self.workers:
            for uid, worker in list(self.workers.items()):
                if worker.sync(worker.pod):
                    del self.workers[uid]
            time.sleep(0.1)

    # -- what pods ask of the node ---------------------------------------------------------

    def _hosts_for(self, pod: Obj, pod_ip: str) -> str:
        return hosts_file(pod, pod_ip, self._cached("services"), self._cached("endpoints"))

    def _cached(self, kind: str) -> list[Obj]:
        informer = self._informers.get(kind)
        return informer.items() if informer else []

    def _lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        informer = self._informers.get(kind)
        cached = informer.get(namespace, name) if informer else None
        if cached is not None:
            return cached
        # Not (yet) in the watch's cache: ask, so a just-created object is not missed.
        try:
            return self.api.get_or_none(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        except (ApiError, httpx.HTTPError) as exc:
            raise ConfigError(f"reading {kind} {namespace}/{name}: {exc}") from exc

    def _log_source(self, namespace: str, pod: str, container: str, previous: bool) -> LogSource:
        worker = next(
            (w for w in list(self.workers.values()) if (w.namespace, w.name) == (namespace, pod)),
            None,
        )
        if worker is None:
            raise LogNotFound(f'pod "{pod}" not found on node {self.node}')
        found = next((c for c in (*worker.init, *worker.containers) if c.name == container), None)
        if found is None:
            raise LogNotFound(f'container "{container}" not found in pod "{pod}"')
        start = found.starts - 1 if previous else found.starts
        if start < 1:
            if previous:
                raise LogNotFound(f'previous terminated container "{container}" not found')
            raise LogNotFound(
                f'container "{container}" in pod "{pod}" is waiting to start: '
                f"{found.waiting_reason or 'ContainerCreating'}"
            )
        current = found.starts

        def running() -> bool:
            return found.starts == current and found.process is not None

        return LogSource(worker.log_path(found, start), running)

    # -- the node object -------------------------------------------------------------------

    def _register_node(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.node, "labels": self.labels},
            "spec": {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]},
        }
        try:
            self.api.post("/api/v1/nodes", node)
        except ApiError as exc:
            if exc.status != 409:
                raise
            self.api.merge_patch(
                f"/api/v1/nodes/{self.node}", {"metadata": {"labels": self.labels}}
            )
        self._post_node_status(ready=True)

    def _node_status(self, ready: bool) -> Obj:
        now = now_iso()
        memory_kib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024
        capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{memory_kib}Ki", "pods": "110"}

        def condition(kind: str, status: str, reason: str, message: str) -> Obj:
            return {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": self._registered_at,
            }

        ready_condition = (
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
            if ready
            else condition("Ready", "Unknown", "KubeletStopped", "the test kubelet stopped")
        )
        return {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "ok"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "ok"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "ok"),
                ready_condition,
            ],
            "addresses": [
                {"type": "InternalIP", "address": self.host_ip},
                {"type": "Hostname", "address": self.node},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.log_server.port}},
            "nodeInfo": {
                "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, self.node).hex,
                "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, self.node)),
                "bootID": _boot_id(),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": "sparkgate://local-processes",
                "kubeletVersion": VERSION,
                "kubeProxyVersion": VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }

    def _post_node_status(self, ready: bool) -> None:
        self.api.merge_patch(
            f"/api/v1/nodes/{self.node}/status", {"status": self._node_status(ready)}
        )

    def _renew_lease(self) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node}"
        renew = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        try:
            self.api.merge_patch(path, {"spec": {"renewTime": renew}})
        except ApiError as exc:
            if exc.status != 404:
                raise
            node = self.api.get(f"/api/v1/nodes/{self.node}")
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": self.node,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": self.node,
                            "uid": node["metadata"]["uid"],
                        }
                    ],
                },
                "spec": {
                    "holderIdentity": self.node,
                    "leaseDurationSeconds": 40,
                    "renewTime": renew,
                },
            }
            self.api.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease)

    def _heartbeats(self) -> None:
        while not self.stopping.is_set():
            try:
                try:
                    self._post_node_status(ready=True)
                except ApiError as exc:
                    if exc.status != 404:
                        raise
                    self._register_node()  # someone deleted the Node: register it again
                self._renew_lease()
            except Exception as exc:
                log.info("node heartbeat: %s", exc)
            self.stopping.wait(self.heartbeat_interval)

    def _mark_not_ready(self) -> None:
        with contextlib.suppress(Exception):
            self._post_node_status(ready=False)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _os_image() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    return platform.system()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sparkgate_dev.kube.kubelet")
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--work", type=Path, required=True, help="the kubelet's state and pods")
    parser.add_argument("--images", type=Path, help="JSON file of local images")
    parser.add_argument("--host-ip", default="127.0.0.1")
    parser.add_argument("--pod-cidr", default="10.244.1.0/24", help="the pods' addresses")
    parser.add_argument("--service-cidr", default="10.96.0.0/24", help="the API server's")
    parser.add_argument("--port", type=int, default=0, help="the log endpoint's (0: free)")
    parser.add_argument("--label", action="append", default=[], help="KEY=VALUE node label")
    parser.add_argument("--backoff-base", type=float, default=1.0, help="seconds")
    parser.add_argument("--backoff-max", type=float, default=20.0, help="seconds")
    parser.add_argument("--heartbeat", type=float, default=10.0, help="seconds")
    parser.add_argument("--stop-grace", type=float, default=10.0, help="seconds, on SIGTERM")
    parser.add_argument("--keep-pods-on-exit", action="store_true")
    parser.add_argument("--podman", help="podman's command (default: podman on PATH)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    api = KubeApi.from_kubeconfig(args.kubeconfig)
    kubelet = Kubelet(
        api,
        node=args.node,
        work=args.work,
        images=args.images,
        host_ip=args.host_ip,
        pod_cidr=args.pod_cidr,
        service_cidr=args.service_cidr,
        port=args.port,
        labels=dict(label.split("=", 1) for label in args.label),
        backoff_base=args.backoff_base,
        backoff_cap=args.backoff_max,
        heartbeat=args.heartbeat,
        stop_grace=args.stop_grace,
        keep_pods_on_exit=args.keep_pods_on_exit,
        podman=args.podman,
    )

    def stop(_signum: int, _frame: object) -> None:
        kubelet.stopping.set()
        kubelet.wake()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        kubelet.run()
    finally:
        api.close()
    log.info("kubelet stopped")


if __name__ == "__main__":
    main()
