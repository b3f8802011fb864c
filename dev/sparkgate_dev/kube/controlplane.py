"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-controller-manager
1.20, built from Debian's source by ``dev/kube/build`` (see ``ensure_built``).

    with ControlPlane(tmp_path / "kube") as plane:
        core = kubernetes.client.CoreV1Api(plane.api_client())

The API server authorizes with RBAC and authenticates a static admin token (group
``system:masters``) and service-account tokens it signs itself (the TokenRequest API works, so
a pod's own service account and its Role are really enforced). Admission is limited to
NamespaceLifecycle and DefaultTolerationSeconds: there is no ServiceAccount admission (the test
kubelet mounts the token itself) and no storage or webhook plugins. The controller manager runs
what a cluster without cloud, nodes' lifecycle or volumes needs: garbage collection, namespaces,
Deployments and ReplicaSets, Jobs, endpoints, service accounts and their tokens.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import ssl
import subprocess
from pathlib import Path
from types import TracebackType

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client as k8s

from sparkgate_dev.kube._process import Daemon, free_port, wait_for

CACHE = Path(os.environ.get("KUBE_CACHE", Path.home() / ".cache" / "sparkgate-kube"))
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "kube" / "build"
HOST = "127.0.0.1"
SERVICE_CIDR = "10.96.0.0/24"
ISSUER = "https://kubernetes.default.svc.cluster.local"
# Nodes' lifecycle, IP ranges, routes, cloud load balancers and volume attachment need a cloud
# or a real node agent; everything else (garbage collector, namespaces, deployments, jobs,
# endpoints, service accounts, tokens, the root CA ConfigMap...) runs.
CONTROLLERS = (
    "*,-nodelifecycle,-nodeipam,-cloud-node-lifecycle,-route,-service,-attachdetach,"
    "-persistentvolume-expander"
)
ADMISSION_DISABLED = (
    "ServiceAccount,LimitRanger,TaintNodesByCondition,Priority,DefaultStorageClass,"
    "StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,"
    "CertificateSigning,CertificateSubjectRestriction,DefaultIngressClass,"
    "MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota"
)


class ControlPlaneUnavailable(RuntimeError):
    """The binaries are not there and cannot be built here (the message says why)."""


def bin_dir() -> Path:
    return CACHE / "bin"


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if not os.access(bin_dir() / name, os.X_OK)]


def ensure_built() -> Path:
    """The directory of the control plane's binaries, running ``dev/kube/build`` first when one
    is missing (about 20 minutes on two cores, once per machine: the result is cached in
    ``$KUBE_CACHE``, default ``~/.cache/sparkgate-kube``)."""
    if not missing_binaries():
        return bin_dir()
    if not BUILD_SCRIPT.exists():
        raise ControlPlaneUnavailable(f"no build script at {BUILD_SCRIPT}")
    CACHE.mkdir(parents=True, exist_ok=True)
    log_path = CACHE / "build.log"
    with open(log_path, "ab") as log:
        done = subprocess.run(
            [str(BUILD_SCRIPT)], stdout=log, stderr=subprocess.STDOUT, check=False
        )
    if done.returncode != 0 or missing_binaries():
        tail = log_path.read_text(errors="replace")[-1500:]
        raise ControlPlaneUnavailable(
            f"dev/kube/build exited with {done.returncode} (missing: "
            f"{', '.join(missing_binaries()) or 'none'}); {log_path} ends:\n{tail}"
        )
    return bin_dir()


class ControlPlane:
    """etcd, kube-apiserver and kube-controller-manager under ``work``, on free loopback ports.

    ``url``, ``token`` (the admin's), ``ca_file`` (the API server's certificate chain) and
    ``kubeconfig`` (an admin kubeconfig file) are what clients need; ``api_client()`` makes a
    ``kubernetes.client.ApiClient`` (close it)."""

    def __init__(self, work: Path, *, binaries: Path | None = None) -> None:
        self.work = work
        self.binaries = binaries or bin_dir()
        self.port = free_port()
        self.url = f"https://{HOST}:{self.port}"
        self.token = secrets.token_hex(24)
        self.cert_dir = work / "pki"
        self.ca_file = self.cert_dir / "apiserver.crt"
        self.kubeconfig = work / "kubeconfig"
        self._etcd_port = free_port()
        self._etcd_peer_port = free_port()
        self.etcd = Daemon(
            "etcd",
            [
                str(self.binaries / "etcd"),
                "--name=sparkgate",
                f"--data-dir={work / 'etcd'}",
                f"--listen-client-urls=http://{HOST}:{self._etcd_port}",
                f"--advertise-client-urls=http://{HOST}:{self._etcd_port}",
                f"--listen-peer-urls=http://{HOST}:{self._etcd_peer_port}",
                f"--initial-advertise-peer-urls=http://{HOST}:{self._etcd_peer_port}",
                f"--initial-cluster=sparkgate=http://{HOST}:{self._etcd_peer_port}",
                "--metrics=basic",
                "--logger=zap",
                "--log-level=warn",
            ],
            work / "logs" / "etcd.log",
        )
        # 1.20's API server, once it stopped listening, can wait long for the connections of
        # open watches to drain: nothing here needs that wait.
        self.apiserver = Daemon(
            "kube-apiserver",
            self._apiserver_argv(),
            work / "logs" / "kube-apiserver.log",
            stop_timeout=3.0,
        )
        self.controller_manager = Daemon(
            "kube-controller-manager",
            self._controller_manager_argv(),
            work / "logs" / "kube-controller-manager.log",
        )

    def _apiserver_argv(self) -> list[str]:
        return [
            str(self.binaries / "kube-apiserver"),
            f"--etcd-servers=http://{HOST}:{self._etcd_port}",
            f"--bind-address={HOST}",
            f"--advertise-address={HOST}",
            f"--secure-port={self.port}",
            "--insecure-port=0",
            f"--cert-dir={self.cert_dir}",
            f"--token-auth-file={self.work / 'tokens.csv'}",
            "--anonymous-auth=false",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--endpoint-reconciler-type=none",
            f"--service-account-key-file={self.work / 'sa.pub'}",
            f"--service-account-signing-key-file={self.work / 'sa.key'}",
            f"--service-account-issuer={ISSUER}",
            f"--api-audiences={ISSUER}",
            "--enable-admission-plugins=NamespaceLifecycle,DefaultTolerationSeconds",
            f"--disable-admission-plugins={ADMISSION_DISABLED}",
            "--allow-privileged=true",
            # The test kubelet advertises 127.0.0.1 and serves logs with a self-signed
            # certificate; without a --kubelet-certificate-authority the API server does not
            # verify it (as on a default cluster).
            "--kubelet-preferred-address-types=InternalIP",
            "--profiling=false",
            "--v=1",
        ]

    def _controller_manager_argv(self) -> list[str]:
        return [
            str(self.binaries / "kube-controller-manager"),
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--port=0",
            "--secure-port=0",
            f"--controllers={CONTROLLERS}",
            f"--service-account-private-key-file={self.work / 'sa.key'}",
            f"--root-ca-file={self.ca_file}",
            "--use-service-account-credentials=false",
            "--profiling=false",
            "--v=1",
        ]

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> ControlPlane:
        missing = [name for name in BINARIES if not (self.binaries / name).exists()]
        if missing:
            raise ControlPlaneUnavailable(f"missing in {self.binaries}: {', '.join(missing)}")
        try:
            self.work.mkdir(parents=True, exist_ok=True)
            self._write_credentials()
            self.etcd.start()
            wait_for(self._etcd_healthy, timeout=timeout, what=f"etcd on port {self._etcd_port}")
            self._start_apiserver(timeout)
            self._write_kubeconfig()
            self.controller_manager.start()
            # The service-account controller making "default" in "default" says the
            # controller manager reached the API server and runs its controllers.
            wait_for(
                self._default_service_account_exists,
                timeout=timeout,
                what="the controller manager to create the default service account",
                interval=0.25,
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for daemon in (self.controller_manager, self.apiserver, self.etcd):
            daemon.stop()

    def restart_apiserver(self, timeout: float = 120.0) -> None:
        """Stop the API server (clients' watches break) and start it again on the same port."""
        self.apiserver.stop()
        self._start_apiserver(timeout)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- clients ---------------------------------------------------------------------------

    def api_client(self) -> k8s.ApiClient:
        configuration = k8s.Configuration(
            host=self.url,
            api_key={"authorization": self.token},
            api_key_prefix={"authorization": "Bearer"},
        )
        configuration.ssl_ca_cert = str(self.ca_file)
        return k8s.ApiClient(configuration)

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def http(self) -> httpx.Client:
        """A raw HTTP client of the API server as the admin (close it)."""
        return httpx.Client(
            base_url=self.url,
            verify=self.ssl_context(),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )

    # -- internals -------------------------------------------------------------------------

    def _write_credentials(self) -> None:
        (self.work / "tokens.csv").write_text(f'{self.token},admin,admin,"system:masters"\n')
        key_path = self.work / "sa.key"
        if key_path.exists():
            return
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        (self.work / "sa.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def _write_kubeconfig(self) -> None:
        # JSON is YAML: kubectl, client-go and the Python client all read it.
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "sparkgate",
                    "cluster": {"server": self.url, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [
                {"name": "sparkgate", "context": {"cluster": "sparkgate", "user": "admin"}}
            ],
            "current-context": "sparkgate",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))

    def _start_apiserver(self, timeout: float) -> None:
        self.apiserver.start()
        wait_for(
            self._apiserver_ready,
            timeout=timeout,
            what=f"kube-apiserver /readyz on {self.url}",
            interval=0.25,
        )

    def _etcd_healthy(self) -> bool:
        self.etcd.check_running()
        try:
            answer = httpx.get(f"http://{HOST}:{self._etcd_port}/health", timeout=2)
        except httpx.TransportError:
            return False
        return answer.status_code == 200 and answer.json().get("health") == "true"

    def _apiserver_ready(self) -> bool:
        self.apiserver.check_running()
        if not self.ca_file.exists():
            return False
        try:
            with self.http() as http:
                return http.get("/readyz").status_code == 200
        except (httpx.TransportError, ssl.SSLError):
            return False

    def _default_service_account_exists(self) -> bool:
        self.controller_manager.check_running()
        with contextlib.suppress(httpx.TransportError), self.http() as http:
            return http.get("/api/v1/namespaces/default/serviceaccounts/default").is_success
        return False
