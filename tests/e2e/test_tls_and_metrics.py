"""HTTPS and /metrics with authentication on: a real server (no Spark needed: in-memory
catalog, no engines kept warm) with a certificate the test makes."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sparkgate.auth.passwords import PasswordFile
from sparkgate.testing import ServerProcess, eventually, local_test_settings


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certfile, keyfile


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    home = tmp_path_factory.mktemp("tls-home")
    certfile, keyfile = _certificate(home)
    PasswordFile(home / "passwords").set("alice", "alice-pw")
    settings = local_test_settings(
        home,
        catalog="in-memory",
        shared_engine=False,
        warm_engines=0,
        auth="password",
        auth_password_file=home / "passwords",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    server = ServerProcess(settings).start(wait=False)
    url = f"https://127.0.0.1:{settings.port}"

    trust = ssl.create_default_context(cafile=certfile)

    def up() -> bool:
        try:
            return httpx.get(f"{url}/healthz", verify=trust, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        eventually(up, timeout=120, what="the HTTPS server")
        yield server, certfile
    finally:
        server.stop()


def test_https_with_credentials(tls_server: tuple[ServerProcess, Path]) -> None:
    server, certfile = tls_server
    url = f"https://127.0.0.1:{server.port}"
    trust = ssl.create_default_context(cafile=certfile)
    with httpx.Client(base_url=url, verify=trust, timeout=30) as client:
        assert client.get("/v1/whoami").status_code == 401
        me = client.get("/v1/whoami", auth=("alice", "alice-pw"))
        assert me.status_code == 200 and me.json()["user"] == "alice"
        # /metrics is behind authentication unless SPARKGATE_METRICS_PUBLIC says otherwise.
        assert client.get("/metrics").status_code == 401
        metrics = client.get("/metrics", auth=("alice", "alice-pw"))
        assert metrics.status_code == 200 and "sparkgate_sessions" in metrics.text
    with pytest.raises(httpx.TransportError):  # plain HTTP is not served
        httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5)
