"""Startup, readiness and liveness probes (httpGet, tcpSocket, exec), each in a thread of its
own that runs the probe every ``periodSeconds`` and turns results into a state with the
probe's thresholds, as a kubelet's prober does."""

from __future__ import annotations

import http.client
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]


def resolve_port(port: int | str, container: Obj) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"no port named {port!r} in container {container['name']}")


class Prober:
    """One probe of one container start. ``state`` is None until the probe decided (readiness:
    not ready; liveness: alive), then True (success threshold reached) or False (failure
    threshold reached)."""

    def __init__(
        self,
        kind: str,
        probe: Obj,
        *,
        container: Obj,
        pod_ip: str,
        exec_prefix: list[str],
        exec_env: dict[str, str],
        gate: Callable[[], bool],
        on_change: Callable[[], None],
    ) -> None:
        self.kind = kind
        self.probe = probe
        self.container = container
        self.pod_ip = pod_ip
        self.exec_prefix = exec_prefix
        self.exec_env = exec_env
        self.gate = gate  # liveness and readiness wait for the startup probe
        self.on_change = on_change
        self.state: bool | None = None
        self.last_message = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"{kind} probe of {container['name']}", daemon=True
        )

    def start(self) -> Prober:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        period = float(self.probe.get("periodSeconds", 10))
        success_threshold = int(self.probe.get("successThreshold", 1))
        failure_threshold = int(self.probe.get("failureThreshold", 3))
        if self._stop.wait(float(self.probe.get("initialDelaySeconds", 0))):
            return
        successes = failures = 0
        while not self._stop.is_set():
            if self.gate():
                ok, message = self.check()
                successes, failures = (successes + 1, 0) if ok else (0, failures + 1)
                self.last_message = message
                state = self.state
                if successes >= success_threshold:
                    state = True
                elif failures >= failure_threshold:
                    state = False
                if state != self.state:
                    self.state = state
                    self.on_change()
            if self._stop.wait(period):
                return

    def check(self) -> tuple[bool, str]:
        timeout = float(self.probe.get("timeoutSeconds", 1))
        try:
            if "httpGet" in self.probe:
                return self._http(self.probe["httpGet"], timeout)
            if "tcpSocket" in self.probe:
                action = self.probe["tcpSocket"]
                port = resolve_port(action["port"], self.container)
                with socket.create_connection((action.get("host") or self.pod_ip, port), timeout):
                    return True, ""
            if "exec" in self.probe:
                done = subprocess.run(
                    [*self.exec_prefix, *self.probe["exec"]["command"]],
                    env=self.exec_env,
                    capture_output=True,
                    timeout=timeout,
                    check=False,
                )
                output = (done.stdout + done.stderr).decode(errors="replace")[-500:]
                return done.returncode == 0, output
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            return False, f"{self.kind} probe failed: {exc}"
        return False, f"unsupported probe {sorted(self.probe)}"

    def _http(self, action: Obj, timeout: float) -> tuple[bool, str]:
        host = action.get("host") or self.pod_ip
        port = resolve_port(action["port"], self.container)
        connection: http.client.HTTPConnection
        if action.get("scheme", "HTTP").upper() == "HTTPS":
            unverified = ssl._create_unverified_context()  # as the kubelet: no verification
            connection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=unverified
            )
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            headers = {h["name"]: h["value"] for h in action.get("httpHeaders") or []}
            headers.setdefault("User-Agent", "kube-probe/1.20")
            connection.request("GET", action.get("path", "/"), headers=headers)
            answer = connection.getresponse()
            answer.read()
            ok = 200 <= answer.status < 400
            return ok, "" if ok else f"HTTP probe failed with statuscode: {answer.status}"
        finally:
            connection.close()
