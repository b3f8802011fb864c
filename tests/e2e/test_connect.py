"""The Spark Connect door end to end: pyspark's own Connect client (``sc://``) against a
running server with authentication on, its engines running Spark's Connect service."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkgate.auth.passwords import PasswordFile
from sparkgate.testing import (
    ServerProcess,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
ACCESS = """
admins: [carol]
groups: {analysts: [bob]}
rules:
  - {groups: [analysts], allow: [sql]}
  - {users: ["*"], allow: [sql, code, streams, jobs]}
conf:
  deny: ["spark.master", "spark.driver.*", "spark.sql.warehouse.dir"]
"""


class Env:
    def __init__(self, server: ServerProcess, connect_port: int, home: Path) -> None:
        self.server = server
        self.connect_port = connect_port
        self.home = home
        self.tokens: dict[str, str] = {}

    def api(self, user: str = "alice") -> httpx.Client:
        return httpx.Client(
            base_url=self.server.url, auth=(user, PASSWORDS[user]), timeout=60
        )

    def token(self, user: str) -> str:
        if user not in self.tokens:
            with self.api(user) as api:
                answer = api.post("/v1/tokens", json={"name": "connect"})
                assert answer.status_code == 201, answer.text
                self.tokens[user] = answer.json()["token"]
        return self.tokens[user]

    def url(self, user: str | None = "alice", **params: str) -> str:
        parts = [f"sc://localhost:{self.connect_port}/"]
        if user is not None:
            parts.append(f"token={self.token(user)}")
        parts.extend(f"{key}={value}" for key, value in params.items())
        return ";".join(parts)

    @contextlib.contextmanager
    def spark(self, user: str | None = "alice", **params: str) -> Iterator[Any]:
        from pyspark.sql.connect.session import SparkSession

        spark = SparkSession.builder.remote(self.url(user, **params)).create()
        try:
            yield spark
        finally:
            with contextlib.suppress(Exception):
                spark.stop()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("connect-home")
    passwords = PasswordFile(home / "passwords")
    for name, password in PASSWORDS.items():
        passwords.set(name, password)
    (home / "access.yaml").write_text(ACCESS)
    connect_port = free_port()
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        auth_password_file=home / "passwords",
        access_file=home / "access.yaml",
        connect_port=connect_port,
        warm_engines=0,
    )
    server = ServerProcess(settings).start()
    try:
        yield Env(server, connect_port, home)
    finally:
        server.stop()
        kill_engines(settings)


def _queries(env: Env, user: str = "alice", **params: Any) -> list[dict[str, Any]]:
    with env.api(user) as api:
        answer = api.get("/v1/queries", params={"limit": 500, **params})
        assert answer.status_code == 200, answer.text
        return list(answer.json()["queries"])


def test_dataframes_sql_pandas_and_udfs_run_and_are_recorded(env: Env) -> None:
    import pandas as pd
    from pyspark.sql.connect.functions import col, udf
    from pyspark.sql.types import LongType

    with env.spark("alice") as spark:
        assert [r.id for r in spark.range(5).collect()] == [0, 1, 2, 3, 4]
        assert spark.sql("SELECT 1 + 1 AS two").collect()[0].two == 2
        frame = pd.DataFrame({"region": ["north", "south", "north"], "amount": [10, 20, 5]})
        spark.createDataFrame(frame).write.mode("overwrite").saveAsTable("connect_sales")
        totals = (
            spark.read.table("connect_sales").groupBy("region").sum("amount").toPandas()
        )
        assert dict(zip(totals["region"], totals["sum(amount)"], strict=True)) == {
            "north": 15,
            "south": 20,
        }
        assert "connect_sales" in [t.name for t in spark.catalog.listTables()]
        double = udf(lambda x: x * 2, LongType())
        doubled = spark.range(3).select(double(col("id")).alias("d")).collect()
        assert [r.d for r in doubled] == [0, 2, 4]
        session_id = spark.session_id
    queries = _queries(env)
    mine = [q for q in queries if q["owner"] == "alice"]
    texts = [q["query"] for q in mine]
    assert "SELECT 1 + 1 AS two" in texts
    assert any("read connect_sales" in t and "aggregate" in t for t in texts), texts
    assert all(q["state"] == "success" for q in mine), [(q["query"], q["state"]) for q in mine]
    assert session_id  # the client's id; sparkgate's session is found from it
