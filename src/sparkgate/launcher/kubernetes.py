"""Engines as pods (``SPARKGATE_LAUNCHER=kubernetes``).

Each engine is a driver pod the node creates through the Kubernetes API, named
``<prefix>-engine-<id>``; inside it the engine runs its Spark driver in client mode against the
API server, and Spark's own Kubernetes scheduler backend starts its executors as pods of their
own, owned by the driver pod (so deleting the driver pod takes them with it) and given back when
idle (dynamic allocation with shuffle tracking).

Why the API from Python rather than ``spark-submit --deploy-mode cluster``: the node then
starts no JVM per engine (spark-submit took 17 s and a JVM's memory on the node to create one
pod), the pod's name is known before it exists (a node that dies between creating it and
recording it finds it again: creating it twice answers "exists", never a second engine), and its
status, deletion and log are one API call each. Spark's cluster mode would only add a driver
Service and a ConfigMap the engine does not need: executors reach the driver at its pod IP.

An engine pod is no child of a node: it reports to the store (PostgreSQL; a pod cannot reach a
node's SQLite file) and obeys ``stopping`` there, as a local engine does, so a node restart or
another node simply goes on with it. The ``engine-pods`` duty (duties/pods.py) ends an engine
whose pod went away (deleted, evicted, OOM-killed, failed) at once instead of after the heartbeat
timeout, and deletes pods whose engine has ended.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sparkgate.engine.pod import (
    EXECUTOR_TEMPLATE_ENV,
    POD_IP_ENV,
    POD_NAME_ENV,
    POD_NAMESPACE_ENV,
    POD_SPARK_CONF_ENV,
)
from sparkgate.errors import ConfigurationError
from sparkgate.recorded import ErrorCode
from sparkgate.schemas.engines import POD_LOG_SCHEME
from sparkgate.settings import EnginePod, Settings
from sparkgate.states import EngineKind
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

log = logging.getLogger("sparkgate.launcher")

ENGINE_LABEL = "sparkgate.io/engine"  # the engine's id, on its driver and executor pods
INSTALLATION_LABEL = "sparkgate.io/installation"  # kubernetes_name_prefix
ROLE_LABEL = "sparkgate.io/role"  # "driver" on engine pods (Spark marks executors itself)
CONTAINER = "engine"
LOG_SCHEME = POD_LOG_SCHEME  # an engine's log_path on Kubernetes: k8s://<namespace>/<pod>

# Spark's memory overhead for a driver running Python beside its JVM (spark.kubernetes.
# memoryOverheadFactor for non-JVM jobs), at least 384 MiB as Spark's own minimum.
_OVERHEAD_FACTOR = 0.4
_OVERHEAD_MIN_MIB = 384
_POD_LIST_TTL = 1.0  # alive() of every engine in a reaper round costs one list
_SECRET_WORDS = ("PASSWORD", "SECRET", "TOKEN", "STORE_URL")


class LaunchRefused(ConfigurationError):
    code = ErrorCode.LAUNCH_REFUSED


def pod_name(settings: Settings, engine_id: int) -> str:
    return f"{settings.kubernetes_name_prefix}-engine-{engine_id}"


def share_level(engine: EngineRecord) -> str:
    """The share level whose pod settings an engine takes, from its share key."""
    key = engine.share_key
    if key is None:
        return "server" if engine.kind is not EngineKind.DEDICATED else "default"
    prefix = key.split(":", 1)[0]
    return {"user": "user", "group": "group", "session": "connection"}.get(prefix, "default")


def pod_settings(settings: Settings, engine: EngineRecord) -> EnginePod:
    """The ``default`` pod settings overlaid by the engine's share level's."""
    merged = settings.kubernetes_engine_pods.get("default", EnginePod()).model_dump()
    level = settings.kubernetes_engine_pods.get(share_level(engine))
    if level is not None:
        merged.update(level.model_dump(exclude_none=True))
    return EnginePod(**merged)


def memory_mib(text: str) -> int:
    """A JVM memory string ("512m", "2g", "1024k") in MiB, as Spark reads it."""
    text = text.strip().lower().removesuffix("b")
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    if text and text[-1] in units:
        return max(1, int(float(text[:-1]) * units[text[-1]]))
    return max(1, int(text) // (1024 * 1024))  # bytes


def driver_memory_request(heap: str) -> str:
    mib = memory_mib(heap)
    return f"{mib + max(_OVERHEAD_MIN_MIB, int(mib * _OVERHEAD_FACTOR))}Mi"


def refuse_unless_runnable(settings: Settings) -> None:
    """Raise LaunchRefused, saying what to set, where engine pods could not work."""
    if settings.resolved_store_url.startswith("sqlite"):
        raise LaunchRefused(
            "SPARKGATE_LAUNCHER=kubernetes needs a store every pod reaches: an engine pod "
            "cannot use this node's SQLite file. Set SPARKGATE_STORE_URL to a PostgreSQL "
            "database (postgresql+psycopg://...)."
        )
    if not settings.kubernetes_image:
        raise LaunchRefused(
            "SPARKGATE_KUBERNETES_IMAGE is not set: the image with Spark, Python and sparkgate "
            "that engine pods run (deploy/image)."
        )


def _template(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchRefused(f"The engine pod template {path} cannot be read: {exc}") from exc
    if not isinstance(loaded, dict) or loaded.get("kind", "Pod") != "Pod":
        raise LaunchRefused(f"The engine pod template {path} is not a Pod.")
    return loaded


def labels(settings: Settings, engine: EngineRecord) -> dict[str, str]:
    return {
        **settings.kubernetes_labels,
        INSTALLATION_LABEL: settings.kubernetes_name_prefix,
        ENGINE_LABEL: str(engine.id),
    }


def executor_conf(settings: Settings, engine: EngineRecord, pod: EnginePod) -> dict[str, str]:
    """The Spark properties that make the engine's executors pods: its image, labels, size
    and placement, and dynamic allocation so that idle executors go."""
    name = pod_name(settings, engine.id)
    conf = {
        "spark.kubernetes.container.image": settings.kubernetes_image or "",
        "spark.kubernetes.executor.podNamePrefix": name,
        # Executors read their configuration from the driver: no ConfigMap (and no right to
        # create one) is needed.
        "spark.kubernetes.executor.disableConfigMap": "true",
        "spark.kubernetes.executor.deleteOnTermination": "true",
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "1",
        "spark.dynamicAllocation.executorIdleTimeout": "30s",
        # An executor holding shuffle files is never idle by default, and every aggregate or
        # join leaves some: a gateway's finished queries need them no more (Spark recomputes
        # what a later stage might miss), so such an executor goes after this too.
        "spark.dynamicAllocation.shuffleTracking.timeout": "120s",
        "spark.dynamicAllocation.maxExecutors": str(pod.max_executors or 2),
        "spark.executor.cores": "1",
        "spark.executor.memory": pod.executor_memory or "1g",
    }
    if engine.kind is EngineKind.SHARED and settings.shared_engine_keep_executor:
        # As on a standalone cluster: its users' first query after a pause finds an executor.
        conf["spark.dynamicAllocation.minExecutors"] = "1"
    if pod.executor_cpu:
        conf["spark.kubernetes.executor.request.cores"] = pod.executor_cpu
    for key, value in {**labels(settings, engine), ROLE_LABEL: "executor"}.items():
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    for key, value in (pod.node_selector or {}).items():
        conf[f"spark.kubernetes.node.selector.{key}"] = value
    return conf


def _env(settings: Settings) -> list[dict[str, Any]]:
    values = settings.to_env()
    if settings.kubernetes_env_secret:
        # Those come from the Secret (envFrom): a pod's spec is readable by whoever lists pods.
        values = {k: v for k, v in values.items() if not any(w in k for w in _SECRET_WORDS)}
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in sorted(values.items())]
    for name, field in (
        (POD_NAME_ENV, "metadata.name"),
        (POD_NAMESPACE_ENV, "metadata.namespace"),
        (POD_IP_ENV, "status.podIP"),
    ):
        env.append({"name": name, "valueFrom": {"fieldRef": {"fieldPath": field}}})
    return env


def engine_pod(settings: Settings, engine: EngineRecord) -> dict[str, Any]:
    """The engine's driver pod, as a manifest: the pod template's (if any) with sparkgate's
    container, labels, size and placement laid over it."""
    pod = pod_settings(settings, engine)
    template = _template(pod.template)
    spec: dict[str, Any] = dict(template.get("spec") or {})
    containers = list(spec.get("containers") or [{}])
    heap = pod.memory or settings.engine_driver_memory or "1g"
    executor_template = dict(template)
    pod_conf = {**executor_conf(settings, engine, pod), "spark.driver.memory": heap}
    env = _env(settings)
    env.append({"name": POD_SPARK_CONF_ENV, "value": json.dumps(pod_conf, sort_keys=True)})
    if pod.tolerations or template:
        # Executors start from the same template, with the tolerations (Spark has no property
        # for those): the engine writes it to a file for spark.kubernetes.executor.podTemplateFile.
        executor_spec = dict(executor_template.get("spec") or {})
        if pod.tolerations:
            executor_spec["tolerations"] = pod.tolerations
        executor_template = {"apiVersion": "v1", "kind": "Pod", **executor_template}
        executor_template["spec"] = executor_spec
        env.append({"name": EXECUTOR_TEMPLATE_ENV, "value": yaml.safe_dump(executor_template)})
    container = dict(containers[0])
    container.update(
        {
            "name": CONTAINER,
            "image": settings.kubernetes_image,
            "args": ["engine", "--engine-id", str(engine.id)],
            "env": [*(container.get("env") or []), *env],
            "resources": {
                "requests": {
                    "cpu": pod.cpu or "1",
                    "memory": driver_memory_request(heap),
                },
                "limits": {"memory": driver_memory_request(heap)},
            },
        }
    )
    if settings.kubernetes_env_secret:
        container["envFrom"] = [
            *(container.get("envFrom") or []),
            {"secretRef": {"name": settings.kubernetes_env_secret}},
        ]
    spec["containers"] = [container, *containers[1:]]
    # A lost engine is not restarted in place: sparkgate starts a new one for its sessions.
    spec["restartPolicy"] = "Never"
    spec["serviceAccountName"] = pod.service_account or settings.kubernetes_service_account
    if pod.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **pod.node_selector}
    if pod.tolerations:
        spec["tolerations"] = [*(spec.get("tolerations") or []), *pod.tolerations]
    metadata = dict(template.get("metadata") or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **metadata,
            "name": pod_name(settings, engine.id),
            "namespace": settings.kubernetes_namespace,
            "labels": {
                **(metadata.get("labels") or {}),
                **labels(settings, engine),
                ROLE_LABEL: "driver",
            },
        },
        "spec": spec,
    }


@dataclass(frozen=True)
class PodStatus:
    """An engine driver pod as the API server sees it."""

    name: str
    engine_id: int
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    deleting: bool  # a deletion was asked (it runs out its grace period)
    reason: str | None  # why it ended: OOMKilled, Evicted, Error (exit N), ...

    @property
    def live(self) -> bool:
        return self.phase in {"Pending", "Running"} and not self.deleting


def _status(pod: Any) -> PodStatus:
    reason = pod.status.reason if pod.status else None
    for container in (pod.status.container_statuses or []) if pod.status else []:
        ended = container.state.terminated if container.state else None
        if ended is not None:
            reason = f"{ended.reason or 'terminated'} (exit {ended.exit_code})"
    return PodStatus(
        name=pod.metadata.name,
        engine_id=int(pod.metadata.labels[ENGINE_LABEL]),
        phase=(pod.status.phase if pod.status else None) or "Unknown",
        deleting=pod.metadata.deletion_timestamp is not None,
        reason=reason,
    )


def api(settings: Settings) -> CoreV1Api:
    """The core API, as this node's service account in a pod, else from the kubeconfig."""
    from kubernetes import client, config

    configuration = client.Configuration()
    if settings.kubernetes_kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(settings.kubernetes_kubeconfig or Path("~/.kube/config").expanduser()),
            client_configuration=configuration,
        )
    return client.CoreV1Api(client.ApiClient(configuration))


class KubernetesLauncher:
    def __init__(self, settings: Settings, store: Store, core: CoreV1Api | None = None) -> None:
        refuse_unless_runnable(settings)
        self.settings = settings
        self.store = store
        self.core = core or api(settings)
        self._lock = threading.Lock()
        self._listed_at = float("-inf")
        self._pods: dict[int, PodStatus] = {}

    @property
    def namespace(self) -> str:
        return self.settings.kubernetes_namespace

    def launch(self, engine: EngineRecord) -> None:
        from kubernetes.client.exceptions import ApiException

        manifest = engine_pod(self.settings, engine)  # refusals raise before anything starts
        name = manifest["metadata"]["name"]
        try:
            # A manifest as the API takes it (the client sends dicts as they are).
            self.core.create_namespaced_pod(self.namespace, manifest)  # type: ignore[arg-type]
        except ApiException as exc:
            if exc.status != 409:
                raise LaunchRefused(
                    f"The API server refused engine {engine.id}'s pod: {exc.status} {exc.reason}"
                    f" {(exc.body or '')[:500]}"
                ) from exc
            # Created already by a node that died before recording it: the same engine.
            log.info("engine %s: pod %s exists, adopted", engine.id, name)
        self.store.engines.set_process(
            engine.id, pid=None, host=None, log_path=f"{LOG_SCHEME}{self.namespace}/{name}",
            now=time.time(),
        )  # fmt: skip

    def pods(self, *, fresh: bool = False) -> dict[int, PodStatus]:
        """This installation's engine driver pods, by engine id (listed at most once a
        second unless ``fresh``)."""
        with self._lock:
            if fresh or time.monotonic() - self._listed_at > _POD_LIST_TTL:
                selector = (
                    f"{INSTALLATION_LABEL}={self.settings.kubernetes_name_prefix},"
                    f"{ROLE_LABEL}=driver"
                )
                listed = self.core.list_namespaced_pod(self.namespace, label_selector=selector)
                self._pods = {s.engine_id: s for s in map(_status, listed.items)}
                self._listed_at = time.monotonic()
            return dict(self._pods)

    def alive(self, engine: EngineRecord) -> bool | None:
        """False once its pod is gone or ended; None before it was created, or when the API
        server cannot be asked."""
        if not (engine.log_path or "").startswith(LOG_SCHEME):
            return None
        try:
            pod = self.pods().get(engine.id)
        except Exception as exc:
            log.warning("engine %s: listing its pod failed: %s", engine.id, exc)
            return None
        return pod is not None and pod.live

    def kill(self, engine: EngineRecord) -> bool:
        """Delete the engine's pod at once (its executors go with it: they are owned by it).
        True if a pod was deleted; never raises."""
        return self.delete(pod_name(self.settings, engine.id), grace=0)

    def delete(self, name: str, *, grace: int | None = None) -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_namespaced_pod(
                name, self.namespace, grace_period_seconds=grace, propagation_policy="Background"
            )
        except ApiException as exc:
            if exc.status != 404:
                log.warning("deleting pod %s failed: %s %s", name, exc.status, exc.reason)
            return False
        except Exception as exc:
            log.warning("deleting pod %s failed: %s", name, exc)
            return False
        with self._lock:
            self._listed_at = float("-inf")
        return True

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        """The engine pod's log (its driver's output)."""
        from kubernetes.client.exceptions import ApiException

        try:
            text = self.core.read_namespaced_pod_log(
                pod_name(self.settings, engine.id), self.namespace, container=CONTAINER,
                tail_lines=tail,
            )  # fmt: skip
        except ApiException as exc:
            if exc.status == 404:
                return ""
            raise
        return str(text)
