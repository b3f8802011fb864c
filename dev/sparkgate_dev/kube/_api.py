"""The few Kubernetes API calls the test kubelet makes, on plain JSON (the objects stay in the
API's own camelCase, as a pod's spec is written), and list+watch caches that re-list after any
break (a watch that expired, an API server restart) so no change is lost."""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml

log = logging.getLogger("kubelet")

Obj = dict[str, Any]


class ApiError(Exception):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.status = status
        try:
            self.body: Obj = json.loads(body)
        except ValueError:
            self.body = {"message": body}
        super().__init__(f"{method} {path}: {status} {self.body.get('message', '')}")

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


class KubeApi:
    """A bearer-token client of one API server, from a kubeconfig's current context (a token
    and a certificate authority file, as ``ControlPlane`` writes it)."""

    def __init__(self, server: str, token: str, ca_file: Path | None) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.ca_file = ca_file
        self._client = self.new_client(timeout=30)

    @classmethod
    def from_kubeconfig(cls, path: Path) -> KubeApi:
        config = yaml.safe_load(path.read_text())
        context_name = config["current-context"]
        context = _named(config["contexts"], context_name)["context"]
        cluster = _named(config["clusters"], context["cluster"])["cluster"]
        user = _named(config["users"], context["user"])["user"]
        ca_file: Path | None = None  # none: the system's authorities
        if "certificate-authority" in cluster:
            ca_file = (path.parent / cluster["certificate-authority"]).resolve()
        return cls(cluster["server"], user["token"], ca_file)

    def new_client(self, timeout: float | None) -> httpx.Client:
        verify: ssl.SSLContext | bool = (
            ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else True
        )
        return httpx.Client(
            base_url=self.server,
            verify=verify,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=httpx.Timeout(timeout, connect=5),
        )

    def close(self) -> None:
        self._client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Obj | None = None,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Obj:
        content = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if content is not None else {}
        answer = self._client.request(method, path, content=content, params=params, headers=headers)
        if answer.status_code >= 400:
            raise ApiError(method, path, answer.status_code, answer.text)
        result: Obj = answer.json()
        return result

    def get(self, path: str, params: dict[str, str] | None = None) -> Obj:
        return self.request("GET", path, params=params)

    def get_or_none(self, path: str) -> Obj | None:
        try:
            return self.get(path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def post(self, path: str, body: Obj) -> Obj:
        return self.request("POST", path, body=body)

    def merge_patch(self, path: str, body: Obj) -> Obj:
        return self.request("PATCH", path, body=body, content_type="application/merge-patch+json")

    def delete(self, path: str, body: Obj | None = None) -> Obj:
        return self.request("DELETE", path, body=body)


def _named(entries: list[Obj], name: str) -> Obj:
    for entry in entries:
        if entry["name"] == name:
            return entry
    raise KeyError(f"no {name!r} in the kubeconfig")


def object_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


class Informer:
    """A list+watch cache of one resource path (``/api/v1/pods``), kept by a daemon thread.

    ``on_change(kind)`` runs (in that thread) after each change. Any watch error, an expired
    resource version or a broken connection leads to a full re-list that replaces the cache,
    so objects deleted meanwhile disappear too."""

    def __init__(
        self,
        api: KubeApi,
        path: str,
        on_change: Callable[[str], None],
        *,
        retry_interval: float = 1.0,
    ) -> None:
        self.api = api
        self.path = path
        self.kind = path.rsplit("/", 1)[-1]
        self.on_change = on_change
        self.retry_interval = retry_interval
        self.synced = threading.Event()
        self._cache: dict[str, Obj] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._client: httpx.Client | None = None
        self._thread = threading.Thread(target=self._run, name=f"watch {self.kind}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop delivering changes. A watch blocked on reading ends with its connection (the
        thread is a daemon: it does not hold its process up)."""
        self._stop.set()
        client = self._client
        if client is not None:
            client.close()

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._cache.values())

    def get(self, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._cache.get(f"{namespace}/{name}")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self.api.new_client(timeout=None) as client:
                    self._client = client
                    if self._stop.is_set():
                        return
                    version = self._list(client)
                    self._watch(client, version)
            except Exception as exc:
                if self._stop.is_set():
                    return
                log.info("watch of %s broke (%s); re-listing", self.path, exc)
                self._stop.wait(self.retry_interval)
            finally:
                self._client = None

    def _list(self, client: httpx.Client) -> str:
        answer = client.get(self.path, timeout=30)
        if answer.status_code >= 400:
            raise ApiError("GET", self.path, answer.status_code, answer.text)
        listed = answer.json()
        with self._lock:
            self._cache = {object_key(item): item for item in listed["items"]}
        self.synced.set()
        self.on_change(self.kind)
        version: str = listed["metadata"]["resourceVersion"]
        return version

    def _watch(self, client: httpx.Client, version: str) -> None:
        while not self._stop.is_set():
            params = {
                "watch": "true",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
            with client.stream("GET", self.path, params=params) as answer:
                if answer.status_code >= 400:
                    raise ApiError("GET", self.path, answer.status_code, answer.read().decode())
                for line in answer.iter_lines():
                    if not line:
                        continue
                    event = json.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        raise ApiError("WATCH", self.path, obj.get("code", 500), json.dumps(obj))
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    with self._lock:
                        if event["type"] == "DELETED":
                            self._cache.pop(object_key(obj), None)
                        else:
                            self._cache[object_key(obj)] = obj
                    self.on_change(self.kind)


@contextlib.contextmanager
def informers(
    api: KubeApi, paths: list[str], on_change: Callable[[str], None]
) -> Iterator[dict[str, Informer]]:
    started = {path.rsplit("/", 1)[-1]: Informer(api, path, on_change).start() for path in paths}
    try:
        yield started
    finally:
        for informer in started.values():
            informer.stop()
