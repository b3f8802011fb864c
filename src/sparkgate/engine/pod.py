"""An engine in a Kubernetes pod (launcher/kubernetes.py made the pod): the Spark properties
that make its driver run in client mode against the API server it was started by, at its pod's
address, and start its executors as pods owned by its own pod.

The node computed what depends on settings (image, executors' size and labels, dynamic
allocation) and put it in the pod's environment; what only the pod knows (its name, its
address, the API server's address and its service account's token) is added here.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping

# What the launcher puts in the pod's environment (launcher/kubernetes.py).
POD_NAME_ENV = "SPARKGATE_POD_NAME"
POD_NAMESPACE_ENV = "SPARKGATE_POD_NAMESPACE"
POD_IP_ENV = "SPARKGATE_POD_IP"
POD_SPARK_CONF_ENV = "SPARKGATE_POD_SPARK_CONF"  # JSON: the executors' properties
EXECUTOR_TEMPLATE_ENV = "SPARKGATE_POD_EXECUTOR_TEMPLATE"  # YAML: executors' pod template

# Where a pod's service-account token and the cluster's CA are mounted (every kubelet).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod_address(environ: Mapping[str, str] = os.environ) -> str | None:
    """The pod's IP when this engine runs in a pod: what its driver and Connect service bind
    and advertise (executors and nodes reach it there)."""
    return environ.get(POD_IP_ENV) or None


def pod_defaults(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The properties the node chose for this engine's executors (image, size, labels,
    dynamic allocation): defaults, which the admin's ``spark_conf`` overrides."""
    if pod_address(environ) is None:
        return {}
    defaults: dict[str, str] = json.loads(environ.get(POD_SPARK_CONF_ENV) or "{}")
    return defaults


def pod_spark_conf(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The properties an engine in a pod cannot run without (its master, address, pod
    name, credentials); none elsewhere."""
    address = pod_address(environ)
    if address is None:
        return {}
    host = environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
    port = environ.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    conf: dict[str, str] = {}
    conf.update(
        {
            "spark.master": f"k8s://https://{host}:{port}",
            "spark.submit.deployMode": "client",
            "spark.kubernetes.namespace": environ.get(POD_NAMESPACE_ENV, "default"),
            # Executors are owned by this pod: deleting it (a lost engine) deletes them.
            "spark.kubernetes.driver.pod.name": environ.get(POD_NAME_ENV, ""),
            "spark.driver.host": address,
            "spark.driver.bindAddress": address,
            # Client mode reads no mounted token by itself: this pod's service account's.
            "spark.kubernetes.authenticate.oauthTokenFile": f"{SERVICE_ACCOUNT_DIR}/token",
            "spark.kubernetes.authenticate.caCertFile": f"{SERVICE_ACCOUNT_DIR}/ca.crt",
        }
    )
    template = environ.get(EXECUTOR_TEMPLATE_ENV)
    if template:
        with tempfile.NamedTemporaryFile(
            "w", prefix="executor-pod-", suffix=".yaml", delete=False
        ) as file:
            file.write(template)
        conf["spark.kubernetes.executor.podTemplateFile"] = file.name
    return conf
