"""HTTPS, the HiveServer2 binary port and Spark Connect over TLS, and /metrics, with
authentication on: a real server (in-memory catalog, no engines kept warm: the Connect and
beeline tests start one) with a certificate the test makes. And the server refusing passwords
in clear text off loopback."""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import ssl
import struct
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
from sparkgate.catalog.metastore import java_executable
from sparkgate.settings import Settings
from sparkgate_dev import (
    ServerProcess,
    beeline,
    env_for,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
    stop_group,
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
        thrift_port=free_port(),
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
        # HiveServer2's HTTP transport is a route like the others: HTTPS, credentials first.
        assert client.post("/cliservice", content=b"x").status_code == 401
        garbage = client.post("/cliservice", content=b"x", auth=("alice", "alice-pw"))
        assert garbage.status_code == 422 and "Not a HiveServer2 Thrift call" in garbage.text
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


# -- HiveServer2's binary port --------------------------------------------------------------


def _trust_store(certfile: Path, directory: Path) -> tuple[Path, str]:
    """A JKS trust store holding the server's certificate, made with the JDK's keytool (the
    one next to the java that runs Spark), as a JDBC user would make theirs."""
    java = Path(java_executable()).resolve()
    keytool = java.with_name("keytool")
    store, password = directory / "truststore.jks", "trust-pw"
    done = subprocess.run(
        [
            str(keytool) if keytool.exists() else (shutil.which("keytool") or "keytool"),
            "-importcert",
            "-noprompt",
            "-alias",
            "sparkgate",
            "-file",
            str(certfile),
            "-keystore",
            str(store),
            "-storetype",
            "JKS",
            "-storepass",
            password,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return store, password


def test_beeline_over_tls_on_the_thrift_port(
    tls_server: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    """beeline with ssl=true and a trust store holding the server's certificate runs a query
    on the binary port; a client that speaks plain Thrift to that port is refused."""
    server, certfile = tls_server
    port = server.settings.thrift_port
    store, password = _trust_store(certfile, tmp_path)
    url = (
        f"jdbc:hive2://127.0.0.1:{port}/default;ssl=true;sslTrustStore={store};"
        f"trustStorePassword={password}"
    )
    out = beeline(url, "alice", "alice-pw", "SELECT 40 + 2 AS answer;", tmp_path)
    assert "answer" in out and "42" in out and "1 row selected" in out, out
    out = beeline(url, "alice", "wrong", "SELECT 1;", tmp_path)
    assert "Authentication failed" in out and "row selected" not in out, out

    # Plain SASL to the TLS port: the server reads it as a broken TLS handshake and closes
    # the connection; the client sees it closed, never a SASL answer.
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(bytes([1]) + struct.pack(">I", 5) + b"PLAIN")
        sock.sendall(bytes([2]) + struct.pack(">I", 15) + b"\0alice\0alice-pw")
        try:
            answer = sock.recv(100)
        except ConnectionResetError:
            answer = b""
        assert answer == b"", answer
    from pyhive import hive
    from thrift.transport.TTransport import TTransportException

    with pytest.raises(TTransportException):
        hive.connect("127.0.0.1", port=port, username="alice", password="alice-pw", auth="CUSTOM")
    # A failed TLS handshake ends before the door sees a connection: nothing logged, and
    # certainly no traceback.
    assert "Traceback" not in server.log_path.read_text()


def test_pyhive_over_tls_on_the_thrift_port(tls_server: tuple[ServerProcess, Path]) -> None:
    """PyHive has no TLS option for the binary transport: it takes a transport made of
    thrift's TSSLSocket and thrift_sasl, as docs/how-to/pyhive.md shows."""
    import thrift_sasl  # type: ignore[import-untyped]
    from pyhive import hive
    from thrift.transport.TSSLSocket import TSSLSocket

    server, certfile = tls_server
    sock = TSSLSocket("127.0.0.1", server.settings.thrift_port, ca_certs=str(certfile))
    transport = thrift_sasl.TSaslClientTransport(
        lambda: hive.get_installed_sasl(
            host="127.0.0.1", sasl_auth="PLAIN", username="alice", password="alice-pw"
        ),
        "PLAIN",
        sock,
    )
    with hive.connect(thrift_transport=transport) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT current_user() AS who")
        assert cursor.fetchall() == [("alice",)]


def test_password_auth_off_loopback_without_tls_is_refused_unless_insecure(
    tmp_path: Path,
) -> None:
    """With authentication on, an address other than loopback and no TLS, the HiveServer2
    binary port would take passwords in clear text: the server refuses to start and says what
    to do; with --insecure it starts and the port answers."""
    PasswordFile(tmp_path / "passwords").set("alice", "alice-pw")
    settings = local_test_settings(
        tmp_path / "home",
        host="0.0.0.0",
        catalog="in-memory",
        shared_engine=False,
        warm_engines=0,
        auth="password",
        auth_password_file=tmp_path / "passwords",
        thrift_port=free_port(),
    )
    command = [sys.executable, "-m", "sparkgate.cli.main", "server", "--port", str(settings.port)]
    refused = subprocess.run(
        command, env=env_for(settings), capture_output=True, text=True, timeout=120, check=False
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = " ".join((refused.stdout + refused.stderr).split())
    assert (
        "refusing to serve HiveServer2's binary port in plain text on 0.0.0.0: passwords and "
        "tokens would cross the network readable. Pass --ssl-certfile/--ssl-keyfile, turn the "
        "port off with --thrift-port 0, or pass --insecure." in said
    ), said
    assert not (tmp_path / "home").exists()  # refused before anything was made

    started = subprocess.Popen(
        [*command, "--insecure"],
        env=env_for(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_sasl_login(settings, started)
    finally:
        stop_group(started)
        kill_engines(settings)  # none should have started: in case one did


def _wait_for_sasl_login(settings: Settings, process: subprocess.Popen[bytes]) -> None:
    def logged_in() -> bool:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", settings.thrift_port), timeout=5) as sock:
                sock.sendall(bytes([1]) + struct.pack(">I", 5) + b"PLAIN")
                sock.sendall(bytes([2]) + struct.pack(">I", 15) + b"\0alice\0alice-pw")
                return sock.recv(5)[:1] == b"\x05"  # SASL COMPLETE
        except OSError:
            return False

    eventually(logged_in, timeout=120, what="the HiveServer2 binary port")
