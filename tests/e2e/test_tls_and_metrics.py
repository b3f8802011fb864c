"""HTTPS and /metrics with authentication on: a real server (no Spark needed: in-memory
catalog, no engines kept warm) with a certificate the test makes."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sparkgate.auth.passwords import PasswordFile
from sparkgate.testing import (
    ServerProcess,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
)


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
        connect_port=free_port(),
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
        kill_engines(settings)  # the Connect test's session started one


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


def test_spark_connect_over_tls(tls_server: tuple[ServerProcess, Path]) -> None:
    """pyspark's Connect client with a token and a host other than localhost speaks TLS: it
    trusts the server's certificate (given as gRPC's root certificates) and runs a query."""
    server, certfile = tls_server
    trust = ssl.create_default_context(cafile=certfile)
    with httpx.Client(base_url=f"https://127.0.0.1:{server.port}", verify=trust) as client:
        made = client.post("/v1/tokens", json={"name": "tls"}, auth=("alice", "alice-pw"))
        assert made.status_code == 201, made.text
    url = f"sc://127.0.0.1:{server.settings.connect_port}/;token={made.json()['token']}"
    script = (
        "from pyspark.sql.connect.session import SparkSession\n"
        f"spark = SparkSession.builder.remote({url!r}).create()\n"
        "print(spark.sql('SELECT 40 + 2 AS answer').collect()[0].answer)\n"
    )
    env = {**os.environ, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(certfile)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "42"
