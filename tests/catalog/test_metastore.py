"""The embedded metastore: loopback only, a port of its home's own, never someone else's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkgate.catalog.metastore import ensure_metastore, read_record, stop_metastore
from sparkgate.errors import ConfigurationError
from sparkgate.procfs import listeners
from sparkgate.settings import Settings


def _listeners(port: int) -> list[str]:
    """The local addresses (hex, as in /proc/net/tcp*) of every socket listening on ``port``."""
    return [one.address for one in listeners() if one.port == port]


def _other_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET: nothing is sent
            address: str = sock.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "home"
    stop_metastore(Settings(home=tmp_path / "home"))


@pytest.fixture
def foreign_listener() -> Iterator[socket.socket]:
    """Something listening on loopback that no sparkgate home started."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


def test_listens_on_loopback_and_is_reused_by_its_home(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(home=home)
    uri = ensure_metastore(settings)
    record = read_record(home / "metastore")
    assert record is not None and uri == record.uri == f"thrift://127.0.0.1:{record.port}"
    assert record.pid is not None
    assert _listeners(record.port) == ["0100007F"]  # 127.0.0.1, nothing else
    other = _other_address()
    if other is not None:
        with socket.socket() as sock:
            sock.settimeout(2)
            assert sock.connect_ex((other, record.port)) != 0

    # Another node of the same home reuses it.
    assert ensure_metastore(settings) == uri
    assert read_record(home / "metastore") == record
    assert "earlier sparkgate" not in caplog.text

    # One an earlier release started (BoneCP: DROP SCHEMA failed) is reused, and its operator
    # told how to restart it.
    site = home / "metastore" / "conf" / "hive-site.xml"
    current = site.read_text()
    site.write_text(current.replace("HikariCP", "BONECP"))
    assert ensure_metastore(settings) == uri
    assert "earlier sparkgate" in caplog.text and "sparkgate stop" in caplog.text
    site.write_text(current)

    # Stopped, it is started again on the port recorded for its home.
    assert stop_metastore(settings)
    with pytest.raises(ProcessLookupError):
        os.kill(record.pid, 0)
    assert ensure_metastore(settings) == uri
    again = read_record(home / "metastore")
    assert again is not None and again.pid != record.pid and again.port == record.port


def test_a_listener_it_did_not_start_is_not_reused(
    home: Path, foreign_listener: socket.socket
) -> None:
    port = foreign_listener.getsockname()[1]
    directory = home / "metastore"
    directory.mkdir(parents=True)
    # A record naming that port with a live pid that is not this home's metastore.
    (directory / "service.json").write_text(json.dumps({"port": port, "pid": os.getpid()}))
    uri = ensure_metastore(Settings(home=home))
    record = read_record(directory)
    assert record is not None and record.port != port and record.pid != os.getpid()
    assert uri == f"thrift://127.0.0.1:{record.port}"
    assert _listeners(record.port) == ["0100007F"]


def test_a_fixed_port_held_by_someone_else_is_refused(
    tmp_path: Path, foreign_listener: socket.socket
) -> None:
    port = foreign_listener.getsockname()[1]
    with pytest.raises(ConfigurationError, match="did not start"):
        ensure_metastore(Settings(home=tmp_path / "home", metastore_port=port))
    assert read_record(tmp_path / "home" / "metastore") is None


def test_a_listener_is_still_its_owners_while_the_owner_opens_and_closes_files() -> None:
    """A JVM opens and closes files all the time: an fd closed between listing /proc/PID/fd
    and reading it must not make a serving metastore look dead (it would be replaced under
    the engines using it)."""
    from sparkgate.catalog.metastore import _owns_listener

    churn = (
        "import os, socket\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True)\n"
        "while True:\n"
        "    for fd in [os.open('/dev/null', os.O_RDONLY) for _ in range(50)]:\n"
        "        os.close(fd)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", churn], stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None
            port = int(child.stdout.readline())
            answers = [_owns_listener(child.pid, port) for _ in range(300)]
        finally:
            child.kill()
    assert all(answers), f"{answers.count(False)} of 300 answers said it does not listen"
