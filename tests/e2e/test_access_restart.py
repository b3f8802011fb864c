"""A server restarted with an access file its running engines were not launched with.

Engines outlive the server on purpose, and read the access file's path and the admins once,
from the environment they were launched with. A node started with another access policy
must not hand anyone an engine that enforces the old one: here the first server has no
access file, alice makes a table, and the server comes back with rules that give only alice
that table. bob then tries it through every door, each placing a new session, as an attacker
who knew the engine from before was still up would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyhive import hive

from sparkgate.processes import alive
from sparkgate.states import EngineState
from sparkgate_dev import (
    TEST_SPARK_CONF,
    ServerProcess,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
    user_files,
)
from tests.e2e.test_access import PASSWORDS, Env

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

TABLE = "restart_notes"
ACCESS = f"""
admins: [carol]
rules:
  - {{users: ["*"], allow: [sql]}}
tables:
  - {{user: alice, schema: default, table: {TABLE}, privileges: [SELECT, INSERT, OWNERSHIP]}}
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("access-restart-home")
    users = user_files(home, PASSWORDS)
    connect_port, thrift_port = free_port(), free_port()
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **users,
        connect_port=connect_port,
        thrift_port=thrift_port,
        warm_engines=0,
        engine_share_level="server",
        spark_conf=TEST_SPARK_CONF,
    )
    env = Env(ServerProcess(settings).start(), connect_port, thrift_port, home)
    try:
        yield env
    finally:
        env.server.stop()  # the server the test restarted
        kill_engines(settings)


def _restart_with_rules(env: Env, access: Path) -> ServerProcess:
    env.server.stop()
    settings = env.server.settings.model_copy(update={"access_file": access})
    env.server = ServerProcess(settings).start()
    return env.server


def test_engines_of_the_old_access_file_serve_nobody_after_a_restart_with_rules(
    env: Env,
) -> None:
    env.rows("alice", f"DROP TABLE IF EXISTS {TABLE}")
    env.rows("alice", f"CREATE TABLE {TABLE} USING parquet AS SELECT 'mine' AS note")
    with env.server.store() as store:
        (old,) = store.engines.list_all(states=[EngineState.RUNNING])
    assert old.pid is not None

    access = env.home / "access.yaml"
    access.write_text(ACCESS)
    server = _restart_with_rules(env, access)

    # REST: reading and dropping alice's table are refused, and the table stays.
    for sql, privilege in (
        (f"SELECT * FROM {TABLE}", "SELECT"),
        (f"DROP TABLE {TABLE}", "OWNERSHIP"),
        (f"INSERT INTO {TABLE} VALUES ('bob was here')", "INSERT"),
    ):
        error = env.refused("bob", sql)
        assert error["code"] == "INSUFFICIENT_PRIVILEGE", error
        assert f"{privilege} on spark_catalog.default.{TABLE}" in error["message"], error
    # HiveServer2 (PyHive) and Spark Connect (pyspark's client): refused too.
    with env.hive("bob") as connection, connection.cursor() as cursor:
        with pytest.raises(hive.OperationalError) as refused:
            cursor.execute(f"DROP TABLE {TABLE}")
        status = refused.value.args[0].status
        assert status.sqlState == "42501", status
        assert f"OWNERSHIP on spark_catalog.default.{TABLE}" in status.errorMessage
    denied = f"SELECT on spark_catalog.default.{TABLE}"
    with env.connect("bob") as spark, pytest.raises(Exception, match=denied):
        spark.table(TABLE).collect()
    assert env.rows("alice", f"SELECT note FROM {TABLE}") == [["mine"]]

    # The engine from before was told to stop when the node started, and exits.
    def exited() -> bool:
        with server.store() as store:
            state = store.engines.get(old.id).state
        return state is EngineState.STOPPED

    eventually(exited, timeout=120, what=f"engine {old.id} stopped")
    eventually(lambda: not alive(old.pid), timeout=30, what=f"engine {old.id}'s process gone")

    with server.store() as store:
        live = store.engines.list_all(states=[EngineState.STARTING, EngineState.RUNNING])
    assert live and old.id not in {engine.id for engine in live}
