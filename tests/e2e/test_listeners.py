"""What an engine listens on, and its Spark UI reached through sparkgate (admins only)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from sparkgate.api.routes import engine_ui
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import EngineNotFound
from sparkgate.http.deps import get_service, get_user
from sparkgate.http.errors import install_error_handlers
from sparkgate.procfs import listeners, socket_inodes
from sparkgate.service.engines import Engines
from sparkgate.settings import Settings
from sparkgate.states import EngineState
from sparkgate.store import Store

ENGINE_ID = 42
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}

_ENGINE = """
import time
from pathlib import Path
from sparkgate.engine.spark import build_spark
from sparkgate.settings import Settings

settings = Settings(
    home=Path({home!r}), spark_master="local[2]", catalog="in-memory", spark_ui=True,
    spark_conf={{"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m"}},
)
spark = build_spark(settings, "sparkgate-engine-{engine_id}", engine_id={engine_id})
spark.sql("select sum(id % 7) from range(1000)").collect()
print("UI", spark.sparkContext.uiWebUrl, flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """A PySpark driver built the way engines build theirs, with its UI on."""
    home = tmp_path_factory.mktemp("ui-home")
    script = home / "engine.py"
    script.write_text(textwrap.dedent(_ENGINE.format(home=str(home), engine_id=ENGINE_ID)))
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"}
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until the UI line, or EOF if it died
        assert line.startswith("UI "), f"the engine did not start: {line!r}"
        yield SimpleNamespace(pid=process.pid, ui_url=line.split()[1])
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


def _descendants(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            found += _descendants(int(child))
    return found


def _listening_addresses(pids: list[int]) -> list[tuple[str, int]]:
    inodes = set().union(*(socket_inodes(pid) for pid in pids))
    return [(one.address, one.port) for one in listeners() if one.inode in inodes]


def test_an_engine_listens_on_loopback_only(engine: SimpleNamespace) -> None:
    listening = _listening_addresses(_descendants(engine.pid))
    ui_port = int(engine.ui_url.rsplit(":", 1)[1])
    assert ui_port in {port for _, port in listening}
    assert ui_port not in range(4040, 4057)  # a port of its own, not Spark's shared range
    assert {address for address, _ in listening} <= LOOPBACK, listening


class _Engines:
    def __init__(self, records: dict[int, Any]) -> None:
        self.records = records

    def get(self, engine_id: int) -> Any:
        if engine_id not in self.records:
            raise EngineNotFound(engine_id)
        return self.records[engine_id]


class _Client:
    """Requests to an app in this process (starlette's TestClient wants a package not here)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
                return await c.request(method, url, **kwargs)

        return asyncio.run(send())

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Users]:
    """The real rights check (and its audit), on a store of its own."""
    home = tmp_path_factory.mktemp("ui-users")
    store = Store.open(f"sqlite:///{home / 'store.db'}")
    store.migrate()
    try:
        yield Users(Settings(home=home), store)
    finally:
        store.close()


def _client(records: dict[int, Any], user: Principal, users: Users) -> _Client:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(engine_ui.router)
    # The service's own rule (Engines.ui) over engines that are stand-ins.
    engines = SimpleNamespace(users=users, store=SimpleNamespace(engines=_Engines(records)))
    engine_of = Engines.ui.__get__(engines)
    service = SimpleNamespace(engines=SimpleNamespace(ui=engine_of))
    app.dependency_overrides[get_service] = lambda: service
    app.dependency_overrides[get_user] = lambda: user
    return _Client(app)


def _record(engine_id: int, ui_url: str | None, state: EngineState = EngineState.RUNNING) -> Any:
    # EngineRecord has no ui_url yet (store column pending): a stand-in with what the route reads.
    return SimpleNamespace(id=engine_id, state=state, host=socket.gethostname(), ui_url=ui_url)


def test_the_ui_is_served_through_sparkgate_to_admins(
    engine: SimpleNamespace, users: Users
) -> None:
    records = {ENGINE_ID: _record(ENGINE_ID, engine.ui_url), 5: _record(5, None)}
    base = f"/v1/engines/{ENGINE_ID}/ui"
    admin = _client(records, Principal(name="carol", admin=True), users)

    first = admin.get(base, follow_redirects=False)
    assert first.status_code == 302
    assert first.headers["location"] == f"{base}/jobs/"
    page = admin.get(f"{base}/jobs/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert f'href="{base}/stages/"' in page.text  # links stay under the proxy
    css = admin.get(f"{base}/static/webui.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    # GET only: nothing that changes the engine goes through.
    assert admin.post(f"{base}/jobs/job/kill/", params={"id": "0"}).status_code == 405

    user = _client(records, Principal(name="bob"), users)
    denied = user.get(f"{base}/jobs/")
    # The refusal of every admin-only call, audited as every refusal is.
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "ACCESS_DENIED"
    [event] = users.store.audit.list_page(user="bob").items
    assert event.outcome == "denied" and event.target == f"engine:{ENGINE_ID}"
    missing = admin.get("/v1/engines/999/ui/jobs/")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "ENGINE_NOT_FOUND"
    off = admin.get("/v1/engines/5/ui/jobs/")
    assert off.status_code == 409 and off.json()["error"]["code"] == "ENGINE_UI_UNAVAILABLE"


def test_a_ui_that_does_not_answer_is_a_conflict(users: Users) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    carol = Principal("carol", admin=True)
    admin = _client({1: _record(1, f"http://localhost:{port}")}, carol, users)
    started = time.monotonic()
    answer = admin.get("/v1/engines/1/ui/jobs/")
    assert answer.status_code == 409 and time.monotonic() - started < 10
    # Only ever proxied to loopback.
    elsewhere = _client({1: _record(1, "http://192.0.2.1:4040")}, carol, users)
    assert elsewhere.get("/v1/engines/1/ui/").status_code == 409
    stopped = _client(
        {1: _record(1, f"http://localhost:{port}", EngineState.STOPPED)}, carol, users
    )
    assert stopped.get("/v1/engines/1/ui/").status_code == 409
