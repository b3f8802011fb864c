"""Fixtures shared by the whole suite.

Expensive things are started once per test run and shared: the Hive metastore, an in-process
Spark session for engine unit tests, and one sparkgate server (with its engines) for the
end-to-end tests that do not need a server of their own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sparkgate.catalog.metastore import ensure_metastore, stop_metastore
from sparkgate.engine.spark import quiet_query_error_logs
from sparkgate.settings import Settings
from sparkgate.states import EngineKind, SessionKind, SessionState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, SessionRecord, StatementRecord
from sparkgate_dev import (
    TEST_SPARK_CONF,
    MakeServer,
    ServerProcess,
    free_port,
    kill_engines,
    local_test_settings,
)

PG_URL = os.environ.get(
    "SPARKGATE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _pg_reachable() -> str | None:
    engine = sa.create_engine(PG_URL)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        return None
    except Exception as exc:
        return (
            f"no PostgreSQL reachable at {PG_URL} ({type(exc).__name__}); set SPARKGATE_TEST_PG_URL"
        )
    finally:
        engine.dispose()


@contextlib.contextmanager
def _pg_schema() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    schema = f"sgtest_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{separator}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(scope="session")
def pg_available() -> None:
    reason = _pg_reachable()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def pg_url(pg_available: None) -> Iterator[str]:
    """A PostgreSQL store URL with an empty schema of its own, for one test."""
    with _pg_schema() as url:
        yield url


@pytest.fixture(scope="session")
def metastore_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Hive metastore service for every server and engine in the run."""
    home = tmp_path_factory.mktemp("metastore-home")
    settings = Settings(home=home, metastore_port=free_port())
    uri = ensure_metastore(settings)
    assert uri is not None
    try:
        yield uri
    finally:
        stop_metastore(settings)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One in-process SparkSession for engine unit tests (the JVM costs ~10 s to start)."""
    from pyspark.sql import SparkSession

    from sparkgate.engine.authz.build import ensure_jar

    builder = SparkSession.builder.master("local[2]").appName("sparkgate-tests")
    for key, value in TEST_SPARK_CONF.items():
        builder = builder.config(key, value)
    # The engine's own JVM classes, as in an engine (its SQL extension is not switched on:
    # that takes spark.sql.extensions).
    builder = builder.config("spark.driver.extraClassPath", str(ensure_jar()))
    session = builder.config("spark.sql.catalogImplementation", "in-memory").getOrCreate()
    quiet_query_error_logs()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[ServerProcess]:
    """The shared end-to-end server: SQLite store, one shared and one warm engine."""
    home = tmp_path_factory.mktemp("server-home")
    settings = local_test_settings(home, metastore_uri=metastore_uri)
    process = ServerProcess(settings).start()
    try:
        process.wait_engines_running()
        yield process
    finally:
        process.stop()
        kill_engines(settings, signal.SIGKILL)


@pytest.fixture
def make_server(tmp_path: Path, metastore_uri: str) -> Iterator[MakeServer]:
    """Start servers of a test's own; all of them and their engines are stopped afterwards."""
    started: list[ServerProcess] = []

    def make(home: Path | None = None, **overrides: Any) -> ServerProcess:
        settings = local_test_settings(
            home or tmp_path / "home", **{"metastore_uri": metastore_uri, **overrides}
        )
        process = ServerProcess(settings).start()
        started.append(process)
        return process

    try:
        yield make
    finally:
        for process in started:
            process.stop()
        for process in started:
            with contextlib.suppress(Exception):
                kill_engines(process.settings, signal.SIGKILL)
            if process.settings.metastore_uri is None:
                stop_metastore(process.settings)  # the embedded one its node started


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials from the environment, and a config directory (stored tokens) of the
    test's own: what the Python client sends is only what the test gives it."""
    for name in ("SPARKGATE_TOKEN", "SPARKGATE_USER", "SPARKGATE_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


# -- stores, on each backend ----------------------------------------------------------

NOW = 1_800_000_000.0


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    yield from _opened(url)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """A store on SQLite only, for tests whose subject is not the store."""
    yield from _opened(f"sqlite:///{tmp_path / 'store.db'}")


def _opened(url: str) -> Iterator[Store]:
    store = Store.open(url)
    store.migrate()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def make_session(store: Store) -> Any:
    """``make_session(state=SessionState.IDLE, kind=SessionKind.INTERACTIVE, engine_id=None)``"""

    def make(
        state: SessionState = SessionState.IDLE,
        kind: SessionKind = SessionKind.INTERACTIVE,
        engine_id: int | None = None,
        now: float = NOW,
    ) -> SessionRecord:
        session = store.sessions.add(kind, now=now)
        if engine_id is not None or state is not SessionState.NOT_STARTED:
            force_state(store, "sessions", session.id, state.value, engine_id=engine_id)
        return store.sessions.get(session.id)

    return make


@pytest.fixture
def make_engine(store: Store) -> Any:
    def make(
        kind: EngineKind = EngineKind.SHARED,
        state: str = "running",
        heartbeat_at: float | None = NOW,
        session_id: int | None = None,
    ) -> EngineRecord:
        engine = store.engines.add(kind, now=NOW, session_id=session_id)
        force_state(store, "engines", engine.id, state, heartbeat_at=heartbeat_at)
        return store.engines.get(engine.id)

    return make


def force_state(store: Store, table_name: str, row_id: int, state: str, **values: Any) -> None:
    """Put a row in any state directly (fixtures only: tests of transitions need every start)."""
    from sparkgate.store import schema

    table = schema.metadata.tables[table_name]
    with store.db.begin() as conn:
        conn.execute(table.update().where(table.c.id == row_id).values(state=state, **values))


# -- the service, on a store, with a launcher that starts nothing ------------------------------


class NoProcesses:
    """A launcher that starts nothing and records what it was asked to start: sessions stay
    where placing left them, and the service's rules are tested without Spark."""

    def __init__(self) -> None:
        self.launched: list[EngineRecord] = []

    def launch(self, engine: EngineRecord) -> None:
        self.launched.append(engine)

    def alive(self, engine: EngineRecord) -> bool | None:
        return None

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        return ""

    def kill(self, engine: EngineRecord) -> bool:
        return False


@pytest.fixture
def service(store: Store, tmp_path: Path) -> Any:
    return make_service(store, Settings(home=tmp_path))


def make_service(store: Store, settings: Settings) -> Any:
    """A node's service on ``store``, whose engines never start."""
    from sparkgate.auth.users import Users
    from sparkgate.launcher.placement import Placement
    from sparkgate.service import Service
    from sparkgate.service.deployer import Deployer
    from sparkgate.service.job_runs import JobRunner
    from sparkgate.service.sessions import Sessions
    from sparkgate.service.stream_jobs import Streams

    users = Users(settings, store, clock=lambda: NOW)
    placement = Placement(settings, store, NoProcesses(), "node-1", clock=lambda: NOW)
    sessions = Sessions(settings, store, placement, users, clock=lambda: NOW)
    streams = Streams(settings, store, sessions, clock=lambda: NOW)
    deployer = Deployer(settings, store, streams, "node-1")
    return Service(settings, store, users, sessions, streams, deployer, JobRunner(store, sessions))


def succeeded(store: Store, statement: StatementRecord, result: dict[str, Any] | None) -> None:
    """The statement ended ``success`` with ``result`` (as its engine would record it)."""
    force_state(store, "statements", statement.id, "success", result=result, finished_at=NOW)


def write_result(directory: Path, rows: int) -> dict[str, Any]:
    """A real result of ``rows`` numbers in ``directory``, and the record's ``result``."""
    import pyarrow as pa

    from sparkgate import results

    batch = pa.record_batch({"n": pa.array(range(rows), pa.int64())})
    writer = results.ResultWriter(directory, batch.schema)
    writer.write(batch)
    stored = writer.commit()
    return {
        "path": stored.path,
        "schema": [{"name": "n", "type": "bigint"}],
        "spark_schema": {
            "type": "struct",
            "fields": [{"name": "n", "type": "long", "nullable": True, "metadata": {}}],
        },
        "row_count": rows,
    }


def run_async(coroutine: Any) -> Any:
    """Run a coroutine to its end on a loop of its own thread: the browser tests leave a
    running loop on the main thread, where ``asyncio.run`` refuses to start another."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
