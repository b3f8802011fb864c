"""`helm uninstall`'s pre-delete hook: no engine pod may outlive the release.

Engine pods are made by the nodes at run time, so Helm does not know them. The nodes are
stopped first (scaled to 0, and gone), so that none launches another engine while this runs;
then the release's engine and executor pods are deleted until none is left.

The standard library only (the image need not carry a Kubernetes client), with the pod's
service account as credentials.
"""

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
NAMESPACE = os.environ["CLEANUP_NAMESPACE"]
DEPLOYMENT = os.environ["CLEANUP_DEPLOYMENT"]
NODE_PODS = os.environ["CLEANUP_NODE_SELECTOR"]
ENGINE_PODS = os.environ["CLEANUP_ENGINE_SELECTOR"]
DEADLINE = time.monotonic() + float(os.environ["CLEANUP_TIMEOUT"])

host = os.environ["KUBERNETES_SERVICE_HOST"]
server = f"https://[{host}]" if ":" in host else f"https://{host}"
server += f":{os.environ['KUBERNETES_SERVICE_PORT']}"
with open(f"{ACCOUNT}/token") as token_file:
    token = token_file.read().strip()
tls = ssl.create_default_context(cafile=f"{ACCOUNT}/ca.crt")


def call(
    method: str, path: str, body: object = None, content_type: str = "application/json"
) -> Any:
    request = urllib.request.Request(server + path, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, data, context=tls, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        if error.code == 404:  # already gone
            return None
        raise


def pods_path(selector: str) -> str:
    return f"/api/v1/namespaces/{NAMESPACE}/pods?" + urllib.parse.urlencode(
        {"labelSelector": selector}
    )


def wait_until_none(
    selector: str, what: str, each_round: Callable[[], object] | None = None
) -> None:
    while True:
        if each_round is not None:
            each_round()
        left = [pod["metadata"]["name"] for pod in call("GET", pods_path(selector))["items"]]
        if not left:
            return
        if time.monotonic() > DEADLINE:
            sys.exit(f"sparkgate cleanup: {what} still there at the deadline: {', '.join(left)}")
        time.sleep(2)


call(
    "PATCH",
    f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}/scale",
    {"spec": {"replicas": 0}},
    "application/merge-patch+json",
)
wait_until_none(NODE_PODS, "node pods")
# Deleted again each round: a driver still stopping may have asked for another executor.
wait_until_none(ENGINE_PODS, "engine pods", lambda: call("DELETE", pods_path(ENGINE_PODS)))
print(f"sparkgate cleanup: no node or engine pod left in {NAMESPACE}")
