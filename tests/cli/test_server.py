"""The start checks of ``sparkgate server``: which configurations it refuses before anything
starts, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkgate.cli.server import listen_problem
from sparkgate.settings import Settings

# Loopback or not, authentication on or off, TLS or not, --insecure or not, the HiveServer2
# binary port on or off (Spark Connect off throughout: its own rule is tested with the CLI).
HIVE2_CASES = [
    # (host, auth, tls, insecure, thrift_port, refused)
    ("0.0.0.0", "password", False, False, 10009, True),
    ("10.1.2.3", "ldap", False, False, 10009, True),
    ("0.0.0.0", "jwt", False, False, 10009, True),  # tokens go as SASL PLAIN's password
    ("::", "password,jwt", False, False, 10009, True),
    ("gateway.example.org", "password", False, False, 10009, True),
    ("0.0.0.0", "password", True, False, 10009, False),  # TLS: the port is wrapped too
    ("0.0.0.0", "password", False, True, 10009, False),  # --insecure
    ("0.0.0.0", "password", False, False, 0, False),  # the port is off
    ("127.0.0.1", "password", False, False, 10009, False),
    ("localhost", "password", False, False, 10009, False),
    ("[::1]", "password", False, False, 10009, False),
    ("0.0.0.0", "none", False, True, 10009, False),  # no password to read (and --insecure)
]


@pytest.mark.parametrize(("host", "auth", "tls", "insecure", "thrift_port", "refused"), HIVE2_CASES)
def test_the_hive2_binary_port_refuses_clear_text_passwords_off_loopback(
    tmp_path: Path,
    host: str,
    auth: str,
    tls: bool,
    insecure: bool,
    thrift_port: int,
    refused: bool,
) -> None:
    tls_files: dict[str, Any] = {}
    if tls:
        tls_files = {"ssl_certfile": tmp_path / "cert.pem", "ssl_keyfile": tmp_path / "key.pem"}
        for path in tls_files.values():
            path.write_text("pem")
    settings = Settings(
        host=host,
        auth=auth,
        insecure=insecure,
        thrift_port=thrift_port,
        connect_port=0,
        **tls_files,
    )
    problem = listen_problem(settings)
    if not refused:
        assert problem is None
        return
    assert problem == (
        f"refusing to serve HiveServer2's binary port in plain text on {host}: passwords and "
        "tokens would cross the network readable. Pass --ssl-certfile/--ssl-keyfile, turn the "
        "port off with --thrift-port 0, or pass --insecure."
    )
