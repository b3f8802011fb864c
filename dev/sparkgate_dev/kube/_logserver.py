"""The kubelet's HTTPS endpoint for containers' logs, which the API server proxies
``kubectl logs`` and ``read_namespaced_pod_log`` to: ``GET /containerLogs/{ns}/{pod}/{container}``
with ``tailLines``, ``limitBytes``, ``follow`` and ``previous``."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

log = logging.getLogger("kubelet")


@dataclass(frozen=True)
class LogSource:
    path: Path
    running: Callable[[], bool]  # follow reads on while this holds


class LogNotFound(Exception):
    """No such pod or container here, or it has not started (the message says which)."""


# (namespace, pod, container, previous) -> where its log is
Resolver = Callable[[str, str, str, bool], LogSource]


def serving_certificate(directory: Path, host_ip: str, node: str) -> tuple[Path, Path]:
    """A self-signed certificate for the node's address (made once, kept in ``directory``)."""
    cert_path, key_path = directory / "kubelet.crt", directory / "kubelet.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{node}@sparkgate-kubelet")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(node), x509.IPAddress(ipaddress.ip_address(host_ip))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def _tail(data: bytes, lines: int) -> bytes:
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


class _Handler(BaseHTTPRequestHandler):
    server: LogServer

    def log_message(self, format: str, *args: object) -> None:
        log.debug("log server: " + format, *args)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if url.path == "/healthz":
            self._answer(200, b"ok")
            return
        if len(parts) != 4 or parts[0] != "containerLogs":
            self._answer(404, b"not found")
            return
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        previous = query.get("previous") == "true"
        try:
            source = self.server.resolve(parts[1], parts[2], parts[3], previous)
        except LogNotFound as exc:
            self._answer(400 if "waiting" in str(exc) else 404, str(exc).encode())
            return
        data = source.path.read_bytes() if source.path.exists() else b""
        if "tailLines" in query:
            data = _tail(data, int(query["tailLines"]))
        budget = int(query["limitBytes"]) if "limitBytes" in query else None
        follow = query.get("follow") == "true" and not previous
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if not follow:
            body = data if budget is None else data[:budget]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        offset = source.path.stat().st_size if source.path.exists() else 0
        budget = self._send(data, budget)
        while budget != 0 and not self.server.stopping.is_set():
            still_running = source.running()
            with open(source.path, "rb") as log_file:
                log_file.seek(offset)
                more = log_file.read()
            offset += len(more)
            budget = self._send(more, budget)
            if not still_running:
                return
            time.sleep(0.2)

    def _send(self, data: bytes, budget: int | None) -> int | None:
        if budget is not None:
            data = data[:budget]
            budget -= len(data)
        if data:
            self.wfile.write(data)
            self.wfile.flush()
        return budget

    def _answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class LogServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, cert: Path, key: Path, resolve: Resolver) -> None:
        super().__init__((host, port), _Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        # The handshake happens in the handler's thread, not in the accepting one.
        self.socket = context.wrap_socket(
            self.socket, server_side=True, do_handshake_on_connect=False
        )
        self.resolve = resolve
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, name="log server", daemon=True)

    @property
    def port(self) -> int:
        port: int = self.server_address[1]
        return port

    def start(self) -> LogServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
