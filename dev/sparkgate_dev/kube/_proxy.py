"""Services' ClusterIPs, made real the way kube-proxy's userspace mode did: every ClusterIP is
a local address (the service CIDR is routed locally, as the pod CIDR is), and for each TCP port
of a Service the kubelet listens on ``clusterIP:port`` and relays each connection to one of the
Service's ready endpoints (round-robin, the next one when one refuses). Clients in pods and on
the host reach a Service by its ClusterIP or, in pods, by its name.

Several kubelets may run it at once: the listening sockets share their ports (SO_REUSEPORT)."""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("kubelet")
Obj = dict[str, Any]
Address = tuple[str, int]


def service_backends(
    services: Iterable[Obj], endpoints: Iterable[Obj], api_server: Address
) -> dict[Address, list[Address]]:
    """``clusterIP:port`` -> the ready endpoints behind it, for every TCP port of every Service
    with a ClusterIP. ``kubernetes.default`` goes to the API server (its Endpoints are not
    maintained here)."""
    by_name = {(e["metadata"]["namespace"], e["metadata"]["name"]): e for e in endpoints}
    table: dict[Address, list[Address]] = {}
    for service in services:
        spec = service.get("spec") or {}
        cluster_ip = spec.get("clusterIP")
        if not cluster_ip or cluster_ip == "None":
            continue
        key = (service["metadata"]["namespace"], service["metadata"]["name"])
        for port in spec.get("ports") or []:
            if port.get("protocol", "TCP") != "TCP":
                continue
            front = (cluster_ip, int(port["port"]))
            if key == ("default", "kubernetes"):
                table[front] = [api_server]
                continue
            backends: list[Address] = []
            for subset in (by_name.get(key) or {}).get("subsets") or []:
                numbers = [
                    p["port"]
                    for p in subset.get("ports") or []
                    if p.get("name", "") == port.get("name", "")
                ]
                if not numbers:
                    continue
                backends += [(a["ip"], int(numbers[0])) for a in subset.get("addresses") or []]
            table[front] = backends
    return table


class ServiceProxy:
    def __init__(self) -> None:
        self._backends: dict[Address, list[Address]] = {}
        self._turn: dict[Address, int] = {}
        self._lock = threading.Lock()
        self._listeners: dict[Address, socket.socket] = {}
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="service proxy", daemon=True)

    def start(self) -> ServiceProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake_write.send(b"x")
        self._thread.join(timeout=5)
        for listener in self._listeners.values():
            listener.close()
        self._wake_read.close()
        self._wake_write.close()
        self._selector.close()

    def update(self, backends: dict[Address, list[Address]]) -> None:
        with self._lock:
            if backends == self._backends:
                return
            self._backends = backends
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")

    def _run(self) -> None:
        while not self._stop.is_set():
            self._listen()
            for key, _ in self._selector.select(timeout=1.0):
                if key.fileobj is self._wake_read:
                    self._wake_read.recv(4096)
                    continue
                listener = key.fileobj
                assert isinstance(listener, socket.socket)
                with contextlib.suppress(OSError):
                    client, _ = listener.accept()
                    threading.Thread(
                        target=self._relay, args=(client, key.data), daemon=True
                    ).start()

    def _listen(self) -> None:
        """Open a listener per new front address, close those of removed ones."""
        with self._lock:
            wanted = set(self._backends)
        for front in set(self._listeners) - wanted:
            listener = self._listeners.pop(front)
            self._selector.unregister(listener)
            listener.close()
        for front in wanted - set(self._listeners):
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            try:
                listener.bind(front)
                listener.listen(128)
            except OSError as exc:
                log.warning("service proxy cannot listen on %s:%s: %s", *front, exc)
                listener.close()
                continue
            listener.setblocking(False)
            self._listeners[front] = listener
            self._selector.register(listener, selectors.EVENT_READ, front)

    def _relay(self, client: socket.socket, front: Address) -> None:
        with self._lock:
            backends = list(self._backends.get(front, []))
            turn = self._turn.get(front, 0)
            self._turn[front] = turn + 1
        client.setblocking(True)
        upstream = None
        for index in range(len(backends)):
            backend = backends[(turn + index) % len(backends)]
            with contextlib.suppress(OSError):
                upstream = socket.create_connection(backend, timeout=5)
                break
        if upstream is None:
            client.close()  # no ready endpoint: the connection is refused, as by kube-proxy
            return
        upstream.settimeout(None)
        sender = threading.Thread(target=_pump, args=(client, upstream), daemon=True)
        sender.start()
        _pump(upstream, client)
        sender.join()
        client.close()
        upstream.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy until end of stream, then pass the end on (half-close)."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
