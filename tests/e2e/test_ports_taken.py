"""A node whose port is taken exits with a message naming the port, and has launched nothing:
no engine that would go on running without it."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import pytest

from sparkgate.store import Store
from sparkgate_dev import ServerProcess, free_port, kill_engines, local_test_settings

# uvicorn's exit status when a server could not start, which `sparkgate server` keeps.
STARTUP_FAILURE = 3


@pytest.mark.parametrize(
    ("door", "setting"),
    [("HTTP", "port"), ("Spark Connect", "connect_port"), ("HiveServer2", "thrift_port")],
)
def test_a_node_whose_port_is_taken_exits_and_launches_no_engine(
    door: str, setting: str, tmp_path: Path, metastore_uri: str
) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        ports = {"port": free_port(), "connect_port": free_port(), "thrift_port": free_port()}
        settings = local_test_settings(
            tmp_path / "home", metastore_uri=metastore_uri, **{**ports, setting: taken}
        )
        server = ServerProcess(settings).start(wait=False)
        assert server.process is not None
        try:
            status = server.process.wait(timeout=180)
        finally:
            server.stop()
    database = settings.resolved_home / "sparkgate.db"
    engines = []
    if database.exists():
        with contextlib.closing(Store.open(f"sqlite:///{database}")) as store:
            engines = store.engines.list_all()
    if engines:
        kill_engines(settings)  # the test fails below; nothing it started outlives it
    assert status == STARTUP_FAILURE, server.log()
    assert str(taken) in server.log(), server.log()
    if door != "HTTP":
        assert f"cannot listen for {door} clients" in server.log(), server.log()
    assert engines == []
    if door == "HTTP":  # its port is taken before the app starts: not even the store opened
        assert not database.exists()
