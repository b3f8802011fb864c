"""Data access control end to end: table rules, masks, row filters, grants and ownership,
enforced inside a real engine on Spark's analyzed plan, tried through every door with clients
nobody here wrote (httpx on the native API, PyHive, the pyspark Spark Connect client, the
livy client) by two users sharing one engine, as an attacker would.

One server for the module, share level ``server``: every user's sessions in one engine.
- carol: admin; she makes the data (hr.salaries, sales.orders)
- alice (group hr): owns schema hr; every right
- bob (group analysts): SELECT on hr.salaries with ssn hidden, salary masked, EU rows only
- dave (group analysts): no rule on hr tables; SELECT on the definer view hr.eu_pay; SELECT on
  schema json (a schema named for a file format); no rule names schema vault
- frank (a JWT; group platform from the token only): SELECT on hr.salaries as platform
- erin: bob's rules on hr.salaries, and ``code`` (Livy pyspark statements)
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from livy.models import SessionKind as LivyKind
from livy.session import LivySession
from pyhive import hive

from sparkgate_dev import (
    TEST_SPARK_CONF,
    ServerProcess,
    beeline,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
    user_files,
    wait_final,
)
from sparkgate_dev.browser import chromium, launched
from sparkgate_dev.jwt import JwtIssuer

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

PASSWORDS = {
    "alice": "alice-pw",
    "bob": "bob-pw",
    "carol": "carol-pw",
    "dave": "dave-pw",
    "erin": "erin-pw",
}
ACCESS = """
admins: [carol]
groups: {hr: [alice], analysts: [bob, dave]}
rules:
  - {users: [alice], allow: [sql, code, streams, jobs]}
  - {groups: [analysts], allow: [sql, streams]}
  - {users: [frank], allow: [sql]}
  - {users: [erin], allow: [sql, code]}
tables:
  - {group: hr, schema: hr, privileges: [SELECT, INSERT, DELETE, UPDATE, OWNERSHIP]}
  - user: bob
    schema: hr
    table: salaries
    privileges: [SELECT]
    columns:
      - {name: ssn, allow: false}
      - {name: salary, mask: "CASE WHEN is_member('hr') THEN salary ELSE 0 END"}
      - {name: name, mask: "concat(substr(name, 1, 1), '***')"}
    filter: "region = 'EU'"
  - user: erin
    schema: hr
    table: salaries
    privileges: [SELECT]
    columns:
      - {name: ssn, allow: false}
      - {name: salary, mask: "CASE WHEN is_member('hr') THEN salary ELSE 0 END"}
      - {name: name, mask: "concat(substr(name, 1, 1), '***')"}
    filter: "region = 'EU'"
  - {group: platform, schema: hr, table: salaries, privileges: [SELECT]}
  - {schema: hr, table: eu_pay, privileges: [SELECT]}
  - {schema: sales, privileges: [SELECT]}
  - {group: analysts, schema: analysts, privileges: [SELECT, INSERT, DELETE, UPDATE]}
  - {user: dave, schema: json, privileges: [SELECT]}
schemas:
  - {group: hr, schema: hr, owner: true}
  - {group: analysts, schema: analysts, owner: true}
"""

SALARIES = [
    ("ann", "EU", 5000, "111"),
    ("ben", "US", 7000, "222"),
    ("cid", "EU", 6000, "333"),
]


class Env:
    def __init__(
        self, server: ServerProcess, connect_port: int, thrift_port: int, home: Path
    ) -> None:
        self.server = server
        self.connect_port = connect_port
        self.thrift_port = thrift_port
        self.home = home
        self.warehouse = server.settings.resolved_warehouse_dir
        self.tokens: dict[str, str] = {}
        self.issuer: JwtIssuer | None = None

    def api(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, auth=(user, PASSWORDS[user]), timeout=120)

    def run(self, user: str, sql: str) -> dict[str, Any]:
        """One query as ``user``, waited for; its record (with ``rows`` when it succeeded)."""
        with self.api(user) as api:
            submitted = api.post("/v1/queries", json={"query": sql}, params={"wait": 60})
            assert submitted.status_code in (200, 201), submitted.text
            query = wait_final(api, submitted.json(), timeout=240)
            if query["state"] == "success":
                result = api.get(f"/v1/queries/{query['id']}/result")
                query["rows"] = result.json().get("rows") if result.status_code == 200 else None
            return query

    def rows(self, user: str, sql: str) -> list[list[Any]]:
        query = self.run(user, sql)
        assert query["state"] == "success", query.get("error")
        rows: list[list[Any]] = query["rows"] or []
        return rows

    def refused(self, user: str, sql: str) -> dict[str, Any]:
        query = self.run(user, sql)
        assert query["state"] == "failed", query.get("rows")
        error: dict[str, Any] = query["error"]
        return error

    def token(self, user: str) -> str:
        if user not in self.tokens:
            with self.api(user) as api:
                answer = api.post("/v1/tokens", json={"name": "connect"})
                assert answer.status_code == 201, answer.text
                self.tokens[user] = answer.json()["token"]
        return self.tokens[user]

    def hive(self, user: str) -> Any:
        return hive.connect(
            "127.0.0.1",
            port=self.thrift_port,
            username=user,
            password=PASSWORDS[user],
            auth="CUSTOM",
        )

    def cli(self, user: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``sparkgate ARGS`` as ``user`` (a token of theirs), against this server."""
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", *args],
            check=False,
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "SPARKGATE_TOKEN": self.token(user),
                "SPARKGATE_SERVER": self.server.url,
            },
            timeout=300,
        )

    @contextlib.contextmanager
    def connect(self, user: str) -> Iterator[Any]:
        from pyspark.sql.connect.session import SparkSession

        spark = SparkSession.builder.remote(
            f"sc://localhost:{self.connect_port}/;token={self.token(user)}"
        ).create()
        try:
            yield spark
        finally:
            with contextlib.suppress(Exception):
                spark.stop()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("access-home")
    users = user_files(home, PASSWORDS, ACCESS)
    connect_port, thrift_port = free_port(), free_port()
    issuer = JwtIssuer()
    issuer.write_jwks(home / "jwks.json")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password,jwt",
        auth_jwt_jwks=str(home / "jwks.json"),
        **users,
        connect_port=connect_port,
        thrift_port=thrift_port,
        warm_engines=0,
        engine_share_level="server",
        spark_conf=TEST_SPARK_CONF,
    )
    server = ServerProcess(settings).start()
    env = Env(server, connect_port, thrift_port, home)
    env.issuer = issuer
    try:
        values = ", ".join(f"('{n}', '{r}', {s}, '{x}')" for n, r, s, x in SALARIES)
        for sql in (
            "CREATE SCHEMA IF NOT EXISTS hr",
            "CREATE SCHEMA IF NOT EXISTS sales",
            "CREATE SCHEMA IF NOT EXISTS analysts",
            "DROP TABLE IF EXISTS hr.salaries",
            "CREATE TABLE hr.salaries (name STRING, region STRING, salary INT, ssn STRING)"
            " USING parquet",
            f"INSERT INTO hr.salaries VALUES {values}",
            # A schema named for a file format (its tables are still tables), and one no
            # rule names.
            "CREATE SCHEMA IF NOT EXISTS json",
            "CREATE SCHEMA IF NOT EXISTS vault",
            "DROP TABLE IF EXISTS json.events",
            "CREATE TABLE json.events USING parquet AS SELECT 7 AS x",
            "DROP TABLE IF EXISTS sales.orders",
            "CREATE TABLE sales.orders USING parquet"
            " AS SELECT * FROM VALUES ('ann', 10), ('ben', 20) AS t(name, amount)",
        ):
            env.rows("carol", sql)
        # alice (hr) owns the view; everyone may read the view, not the table under it.
        env.rows(
            "alice",
            "CREATE OR REPLACE VIEW hr.eu_pay"
            " AS SELECT name, salary FROM hr.salaries WHERE region = 'EU'",
        )
        yield env
    finally:
        server.stop()
        kill_engines(settings)


def _salaries(env: Env) -> list[list[Any]]:
    return sorted(env.rows("carol", "SELECT * FROM hr.salaries"))


def _denied(
    error: dict[str, Any], privilege: str = "SELECT", obj: str = "spark_catalog.hr.salaries"
) -> None:
    assert error["code"] == "INSUFFICIENT_PRIVILEGE", error
    assert error.get("sql_state") == "42501", error
    assert f"{privilege} on {obj}" in error["message"], error


def test_masks_hidden_columns_and_row_filter_apply_to_select_star(env: Env) -> None:
    query = env.run("bob", "SELECT * FROM hr.salaries ORDER BY salary")
    assert query["state"] == "success", query.get("error")
    assert [c["name"] for c in query["result"]["schema"]] == ["name", "region", "salary"]
    assert query["rows"] == [["a***", "EU", 0], ["c***", "EU", 0]]
    error = env.refused("bob", "SELECT ssn FROM hr.salaries")
    assert error["code"] == "UNRESOLVED_COLUMN.WITH_SUGGESTION", error


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM hr.salaries",
        "SELECT count(*) FROM hr.salaries",
        "WITH s AS (SELECT * FROM hr.salaries) SELECT name FROM s",
        "SELECT name FROM sales.orders WHERE name IN (SELECT name FROM hr.salaries)",
        "SELECT o.amount FROM sales.orders o JOIN hr.salaries s ON o.name = s.name",
        "SELECT name FROM sales.orders UNION ALL SELECT name FROM hr.salaries",
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM hr.salaries)",
        "SELECT * FROM (SELECT * FROM (SELECT ssn FROM hr.salaries))",
    ],
)
def test_every_shape_of_a_read_of_a_denied_table_is_refused(env: Env, sql: str) -> None:
    _denied(env.refused("dave", sql))


def test_a_persistent_view_runs_with_its_owners_privileges(env: Env) -> None:
    assert sorted(env.rows("dave", "SELECT * FROM hr.eu_pay")) == [["ann", 5000], ["cid", 6000]]


def test_writes_and_ddl_on_a_denied_table_change_nothing(env: Env) -> None:
    before = _salaries(env)
    for sql, privilege in [
        ("INSERT INTO hr.salaries VALUES ('eve', 'EU', 1, '999')", "INSERT"),
        ("INSERT OVERWRITE TABLE hr.salaries SELECT 'x', 'EU', 1, 'y'", "INSERT"),
        ("DROP TABLE hr.salaries", "OWNERSHIP"),
        ("ALTER TABLE hr.salaries ADD COLUMNS (bonus INT)", "OWNERSHIP"),
        ("ALTER TABLE hr.salaries RENAME TO hr.gone", "OWNERSHIP"),
        ("TRUNCATE TABLE hr.salaries", "OWNERSHIP"),
    ]:
        error = env.run("dave", sql).get("error")
        assert error is not None, sql
        _denied(error, privilege)
    # bob may read (masked), not write.
    _denied(env.refused("bob", "INSERT INTO hr.salaries VALUES ('eve', 'EU', 1, '999')"), "INSERT")
    assert _salaries(env) == before


def test_ctas_needs_its_sources_and_the_target_schema(env: Env) -> None:
    _denied(env.refused("dave", "CREATE TABLE analysts.copy AS SELECT * FROM hr.salaries"))
    _denied(
        env.refused("dave", "CREATE TABLE hr.mine AS SELECT * FROM sales.orders"),
        "OWNERSHIP",
        "schema spark_catalog.hr",
    )
    tables = env.rows("carol", "SHOW TABLES IN analysts")
    assert not [t for t in tables if t[1] == "copy"]
    assert not [t for t in env.rows("carol", "SHOW TABLES IN hr") if t[1] == "mine"]


def test_reads_and_writes_by_path_need_the_code_right(env: Env) -> None:
    location = env.warehouse / "hr.db" / "salaries"
    error = env.refused("dave", f"SELECT * FROM parquet.`{location}`")
    assert error["code"] == "INSUFFICIENT_PRIVILEGE" and "CODE on path" in error["message"], error
    error = env.refused(
        "bob", f"INSERT OVERWRITE DIRECTORY '{env.home}/out' USING parquet SELECT 1"
    )
    assert error["code"] == "INSUFFICIENT_PRIVILEGE", error
    assert not (env.home / "out").exists()


FORMATS = ["parquet", "orc", "csv", "json", "text", "binaryFile", "avro"]


def test_paths_in_every_format_need_code_there_or_not(env: Env) -> None:
    there = env.warehouse / "hr.db" / "salaries"
    people = env.home / "people.csv"
    people.write_text("a,b\n1,2\n")
    for fmt in FORMATS:
        for path in (there, people, env.home / "no-such-dir"):
            error = env.refused("dave", f"SELECT * FROM {fmt}.`{path}`")
            assert error["code"] == "INSUFFICIENT_PRIVILEGE", (fmt, path, error)
            assert f"dave lacks CODE on path {path}" in error["message"], (fmt, path, error)
    # With `code`, a path is read.
    assert env.rows("alice", f"SELECT * FROM csv.`{people}`") == [["a", "b"], ["1", "2"]]
    # A table in a schema named for a format is a table, to whoever may read it.
    assert env.rows("dave", "SELECT x FROM json.events") == [[7]]
    _denied(env.refused("bob", "SELECT x FROM json.events"), "CODE", "path events")


def test_connect_reads_and_writes_by_path_need_code_in_every_format(env: Env) -> None:
    from pyspark.errors import PySparkException

    there = str(env.warehouse / "hr.db" / "salaries")
    absent = str(env.home / "no-such-dir")
    out = env.home / "written-by-path"
    with env.connect("dave") as dave:

        def read(fmt: str, path: str) -> Callable[[], object]:
            return lambda: dave.read.format(fmt).load(path).collect()

        def write(fmt: str) -> Callable[[], object]:
            return lambda: dave.range(1).write.format(fmt).save(str(out))

        attempts: list[tuple[str, Callable[[], object]]] = []
        for fmt in FORMATS:
            attempts += [(f"{fmt} {path}", read(fmt, path)) for path in (there, absent)]
            if fmt != "avro":  # without spark-avro, Spark refuses to write it before anything
                attempts.append((f"write {fmt}", write(fmt)))
        attempts += [
            ("read.text", lambda: dave.read.text(absent).collect()),
            ("read.csv", lambda: dave.read.csv(there).collect()),
            ("read.json", lambda: dave.read.json(absent).collect()),
            ("option path", lambda: dave.read.format("csv").option("path", there).load().count()),
            ("sql csv", lambda: dave.sql(f"SELECT * FROM csv.`{there}`").collect()),
            ("write.csv", lambda: dave.range(1).write.mode("overwrite").csv(str(out))),
        ]
        for name, attempt in attempts:
            with pytest.raises(PySparkException) as refused:
                attempt()
                raise AssertionError(f"not refused: {name}")
            assert refused.value.getCondition() == "INSUFFICIENT_PRIVILEGE", (name, refused.value)
            assert "lacks CODE on" in str(refused.value.getMessage()), (name, refused.value)
    assert not out.exists()
    with env.connect("alice") as alice:  # alice has `code`
        assert alice.read.format("parquet").load(there).count() == 3


def _schemas_over_rest(env: Env, user: str) -> set[str]:
    return {row[0] for row in env.rows(user, "SHOW SCHEMAS")}


def test_schema_listings_show_what_a_rule_or_an_object_gives_at_every_door(env: Env) -> None:
    from TCLIService import ttypes

    # dave: analysts and json (his rules), hr (eu_pay's rule is everyone's), sales; not vault,
    # not default. alice: hr (hers), sales. carol (an admin): all of them.
    expected = {"dave": {"analysts", "hr", "json", "sales"}, "alice": {"hr", "sales"}}
    for user, schemas in expected.items():
        assert _schemas_over_rest(env, user) == schemas, user
    assert {"analysts", "hr", "json", "sales", "vault", "default"} <= _schemas_over_rest(
        env, "carol"
    )
    # A grant on one table of a schema shows the schema.
    env.rows("carol", "CREATE TABLE IF NOT EXISTS vault.open_t USING parquet AS SELECT 1 AS x")
    env.rows("carol", "GRANT SELECT ON TABLE vault.open_t TO USER bob")
    try:
        assert "vault" in _schemas_over_rest(env, "bob")
        assert "vault" not in _schemas_over_rest(env, "dave")
    finally:
        env.rows("carol", "DROP TABLE vault.open_t")
    # HiveServer2: SHOW SCHEMAS and the GetSchemas call.
    with env.hive("dave") as conn, conn.cursor() as cursor:
        cursor.execute("SHOW SCHEMAS")
        assert {r[0] for r in cursor.fetchall()} == expected["dave"]
        answer = conn.client.GetSchemas(ttypes.TGetSchemasReq(sessionHandle=conn.sessionHandle))
        assert answer.status.statusCode == 0, answer.status
        fetched = conn.client.FetchResults(
            ttypes.TFetchResultsReq(
                operationHandle=answer.operationHandle, orientation=0, maxRows=1000
            )
        )
        first = fetched.results.columns[0]
        listed = set(next(v for v in first.__dict__.values() if v is not None).values)
        # global_temp is every session's own, listed to all as Spark Thrift Server does.
        assert listed == expected["dave"] | {"global_temp"}, listed
    # Spark Connect.
    with env.connect("dave") as dave:
        assert {d.name for d in dave.catalog.listDatabases()} == expected["dave"]
        assert {r[0] for r in dave.sql("SHOW DATABASES").collect()} == expected["dave"]
    with env.connect("carol") as carol:
        assert "vault" in {d.name for d in carol.catalog.listDatabases()}
    with env.connect("alice") as alice:  # each name once, not the last one's twice
        listed_tables = [t.name for t in alice.catalog.listTables("hr") if not t.isTemporary]
        assert sorted(listed_tables) == ["eu_pay", "salaries"], listed_tables


def test_metadata_shows_only_what_the_user_may_use(env: Env) -> None:
    assert [t[1] for t in env.rows("dave", "SHOW TABLES IN hr")] == ["eu_pay"]
    assert sorted(t[1] for t in env.rows("alice", "SHOW TABLES IN hr")) == ["eu_pay", "salaries"]
    # No privilege on the name: refused, as for a table not there; "not found" only where
    # the user could see the table if there were one.
    _denied(env.refused("dave", "DESCRIBE TABLE hr.salaries"))
    _denied(env.refused("dave", "DESCRIBE TABLE hr.nothing"), obj="spark_catalog.hr.nothing")
    error = env.refused("dave", "DESCRIBE TABLE sales.nothing")
    assert error["code"] == "TABLE_OR_VIEW_NOT_FOUND", error


# -- the rules answer before existence does ---------------------------------------------------

# Statements whose Spark errors would come before the check and tell an existing table from an
# absent one (UNSUPPORTED_OVERWRITE, a column count or suggestion, "already exists", "not
# found"); {t} is hr.salaries (there) or hr.nothing (not), on neither of which dave has any
# privilege.
SHAPES = [
    "INSERT OVERWRITE TABLE {t} SELECT * FROM {t} WHERE false",
    "INSERT INTO {t} VALUES (1)",
    "SELECT nme FROM {t}",
    "SELECT * FROM {t}",
    "SELECT count(*) FROM sales.orders WHERE name IN (SELECT nme FROM {t})",
    "CREATE TABLE {t} (a INT) USING parquet",
    "CREATE TABLE {t} USING parquet AS SELECT 1 AS a",
    "CREATE OR REPLACE VIEW {t} AS SELECT 1 AS a",
    "DESCRIBE TABLE {t}",
    "DESCRIBE TABLE EXTENDED {t} AS JSON",
    "SHOW CREATE TABLE {t}",
    "SHOW COLUMNS IN {t}",
    "DROP TABLE IF EXISTS {t}",
    "ALTER TABLE {t} ADD COLUMNS (b INT)",
    "TRUNCATE TABLE {t}",
    "DELETE FROM {t} WHERE nme = 1",
    "MERGE INTO {t} USING sales.orders o ON {t}.nme = o.name WHEN MATCHED THEN DELETE",
]
HIDDEN_WORDS = ("ssn", "salary", "region", "`name`", "UNRESOLVED", "exists", "found")


def _alike(there: dict[str, Any], gone: dict[str, Any], absent: str) -> None:
    """The refusal for hr.salaries and for ``absent`` say the same, but for the name."""
    assert there["code"] == gone["code"] == "INSUFFICIENT_PRIVILEGE", (there, gone)
    assert there.get("sql_state") == gone.get("sql_state") == "42501", (there, gone)
    named = there["message"].replace("hr.salaries", "hr.T")
    assert named == gone["message"].replace(absent, "hr.T"), (there, gone)
    assert not [w for w in HIDDEN_WORDS if w in there["message"]], there


@pytest.mark.parametrize("shape", SHAPES)
def test_an_existing_and_an_absent_table_answer_alike_to_whom_may_see_neither(
    env: Env, shape: str
) -> None:
    before = _salaries(env)
    there = env.refused("dave", shape.format(t="hr.salaries"))
    gone = env.refused("dave", shape.format(t="hr.nothing"))
    _alike(there, gone, "hr.nothing")
    assert _salaries(env) == before
    _absent(env, "hr.nothing")


_REFUSALS: dict[str, str] = {}


@settings(
    max_examples=int(os.environ.get("SPARKGATE_ACCESS_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    table=st.from_regex(r"[a-z][a-z0-9_]{0,14}", fullmatch=True).filter(
        lambda t: t not in {"eu_pay", "salaries"}
    ),
    shape=st.sampled_from(SHAPES),
)
def test_any_name_without_a_privilege_answers_as_hr_salaries_does(
    env: Env, table: str, shape: str
) -> None:
    """Whatever the name (a table there or not), the answer is the one hr.salaries gets."""
    if shape not in _REFUSALS:
        _REFUSALS[shape] = env.refused("dave", shape.format(t="hr.salaries"))["message"]
    gone = env.refused("dave", shape.format(t=f"hr.{table}"))
    assert gone["code"] == "INSUFFICIENT_PRIVILEGE", (shape, gone)
    assert gone["message"] == _REFUSALS[shape].replace("hr.salaries", f"hr.{table}"), gone


def test_connect_writes_and_reads_answer_alike_for_a_table_there_or_not(env: Env) -> None:
    from pyspark.errors import PySparkException

    before = _salaries(env)
    with env.connect("dave") as dave:
        wrong = dave.createDataFrame([(1,)], "x int")  # not hr.salaries' columns

        def attempts(table: str) -> dict[str, Callable[[], object]]:
            return {
                "saveAsTable append": lambda: wrong.write.mode("append").saveAsTable(table),
                "saveAsTable overwrite": lambda: wrong.write.mode("overwrite").saveAsTable(table),
                "saveAsTable": lambda: wrong.write.saveAsTable(table),
                "insertInto": lambda: wrong.write.insertInto(table),
                "writeTo append": lambda: wrong.writeTo(table).append(),
                "read.table": lambda: dave.read.table(table).select("nme").collect(),
                "sql": lambda: dave.sql(f"SELECT nme FROM {table}").collect(),
            }

        def refusal(attempt: Callable[[], object]) -> tuple[str | None, str]:
            with pytest.raises(PySparkException) as refused:
                attempt()
            return refused.value.getCondition(), str(refused.value.getMessage())

        there, gone = attempts("hr.salaries"), attempts("hr.nothing")
        for name in there:
            code, message = refusal(there[name])
            absent_code, absent_message = refusal(gone[name])
            assert code == absent_code == "INSUFFICIENT_PRIVILEGE", (name, message)
            assert message.replace("hr.salaries", "hr.T") == absent_message.replace(
                "hr.nothing", "hr.T"
            ), (name, message, absent_message)
            assert "ssn" not in message and "salary" not in message, (name, message)
    assert _salaries(env) == before
    _absent(env, "hr.nothing")


def test_current_user_is_the_authenticated_user_and_cannot_be_set(env: Env) -> None:
    assert env.rows("dave", "SELECT current_user()") == [["dave"]]
    with env.api("dave") as api:
        refused = api.post("/v1/queries", json={"query": "SET sparkgate.user=carol"})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "SETTING_DENIED"
        # However it is written, the door refuses it, and the engine would (a second line).
        for sql in ("SET `sparkgate.user` = carol -- a comment", "SET\n  sparkgate.user=carol"):
            answer = api.post("/v1/queries", json={"query": sql}, params={"wait": 60})
            assert answer.status_code == 403 or answer.json()["state"] == "failed", answer.text
    assert env.rows("dave", "SELECT current_user()") == [["dave"]]


def test_grants_given_by_the_owner_open_a_table_and_revoke_closes_it(env: Env) -> None:
    _denied(env.refused("bob", "GRANT SELECT ON TABLE hr.salaries TO USER dave"), "OWNERSHIP")
    env.rows("alice", "GRANT SELECT ON TABLE hr.salaries TO USER dave")
    assert len(env.rows("dave", "SELECT * FROM hr.salaries")) == 3
    grants = env.rows("alice", "SHOW GRANTS ON TABLE hr.salaries")
    assert [g[:4] for g in grants] == [["USER", "dave", "SELECT", "alice"]]
    env.rows("alice", "REVOKE SELECT ON TABLE hr.salaries FROM USER dave")
    _denied(env.refused("dave", "SELECT * FROM hr.salaries"))
    assert env.rows("alice", "SHOW GRANTS ON TABLE hr.salaries") == []


def test_a_creator_owns_their_table_and_its_grants_go_with_it(env: Env) -> None:
    env.rows("dave", "CREATE TABLE analysts.dave_t USING parquet AS SELECT 1 AS x")
    env.rows("dave", "GRANT SELECT ON analysts.dave_t TO GROUP hr")
    assert env.rows("alice", "SELECT x FROM analysts.dave_t") == [[1]]
    env.rows("dave", "DROP TABLE analysts.dave_t")
    env.rows("dave", "CREATE TABLE analysts.dave_t USING parquet AS SELECT 2 AS x")
    _denied(
        env.refused("alice", "SELECT x FROM analysts.dave_t"), obj="spark_catalog.analysts.dave_t"
    )
    env.rows("dave", "DROP TABLE analysts.dave_t")


def test_each_query_says_what_it_read_and_wrote_and_writes_are_audited(env: Env) -> None:
    read = env.run("bob", "SELECT count(*) FROM hr.salaries s JOIN sales.orders o USING (name)")
    assert read["output"]["tables"] == {
        "read": ["spark_catalog.hr.salaries", "spark_catalog.sales.orders"],
        "written": [],
    }, read["output"]
    made = env.run(
        "dave", "CREATE TABLE analysts.touched USING parquet AS SELECT * FROM sales.orders"
    )
    assert made["state"] == "success", made["error"]
    assert made["output"]["tables"] == {
        "read": ["spark_catalog.sales.orders"],
        "written": ["spark_catalog.analysts.touched"],
    }, made["output"]
    dropped = env.run("dave", "DROP TABLE analysts.touched")
    assert dropped["output"]["tables"]["written"] == ["spark_catalog.analysts.touched"]
    with env.api("carol") as api:
        events = api.get("/v1/audit", params={"object": "analysts.touched"}).json()["events"]
    assert [(e["user"], e["action"], e["query_id"], e["door"]) for e in events] == [
        ("dave", "table.ownership", dropped["id"], "rest"),
        ("dave", "table.create", made["id"], "rest"),
    ]


def _history(env: Env, who: str, **params: Any) -> list[dict[str, Any]]:
    with env.api(who) as api:
        answer = api.get("/v1/audit", params={"limit": 1000, **params})
        assert answer.status_code == 200, answer.text
        events: list[dict[str, Any]] = answer.json()["events"]
        return events


def test_the_access_history_says_who_read_a_table_through_every_door(env: Env) -> None:
    """Reads by the native API, the CLI, Livy, PyHive, Spark Connect and the dashboard each
    appear under the table, as their user and door, with the columns read."""
    env.rows("carol", "DROP TABLE IF EXISTS sales.history")
    made = env.run(
        "carol", "CREATE TABLE sales.history USING parquet AS SELECT 1 AS a, 'x' AS b, 2 AS c"
    )
    rest = env.run("bob", "SELECT a FROM sales.history")
    cli = env.cli("dave", "sql", "SELECT b FROM sales.history")
    assert cli.returncode == 0, cli.stderr
    with env.hive("dave") as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sales.history")
        assert cursor.fetchall() == [(1,)]
    with LivySession.create(
        env.server.url, auth=("bob", PASSWORDS["bob"]), kind=LivyKind.SQL, echo=False
    ) as session:
        assert session.download_sql("SELECT c FROM sales.history")["c"][0] == 2
    with env.connect("bob") as bob:
        assert bob.read.table("sales.history").select("b").collect()[0][0] == "x"
        assert bob.table("sales.history").count() == 1
    with env.api("carol") as api:  # the catalog page's first rows are a read, as carol
        shown = api.get("/ui/tables/sales.history")
        assert shown.status_code == 200, shown.text

    def reads() -> list[tuple[str, str, str]]:
        return sorted(
            (e["user"], e["door"], ",".join(e["detail"].get("columns") or []))
            for e in _history(env, "carol", object="sales.history", action="table.select")
        )

    expected = [
        ("bob", "connect", ""),  # count(): no column of it reaches the answer
        ("bob", "connect", "b"),
        ("bob", "livy", "c"),
        ("bob", "rest", "a"),
        ("carol", "dashboard", "a,b,c"),
        ("dave", "cli", "b"),
        ("dave", "hive2", ""),
    ]
    # A Connect operation's reads are recorded by its engine a beat after its end.
    eventually(lambda: reads() == expected, timeout=60, what=f"the reads: {reads()}")
    # A Connect operation's record says what it read, as a statement's does.
    with env.api("carol") as api:
        for event in _history(env, "carol", object="sales.history", door="connect"):
            query = api.get(f"/v1/queries/{event['query_id']}").json()
            assert query["output"]["tables"]["read"] == ["spark_catalog.sales.history"], query
        html = api.get("/ui/tables/sales.history").text
        assert 'data-testid="history"' in html and "connect" in html and "hive2" in html
    events = _history(env, "carol", object="sales.history", door="rest")
    assert {(e["user"], e["query_id"]) for e in events} >= {("bob", rest["id"])}
    assert ("carol", "table.create", made["id"]) in {
        (e["user"], e["action"], e["query_id"]) for e in events
    }


def test_the_access_history_says_refusals_masks_and_filters_to_whom_it_may(env: Env) -> None:
    """A refusal appears as denied; a masked and filtered read says so, never naming a hidden
    column; pages follow; nobody reads another's history but a table's owner."""
    denied = env.run("dave", "SELECT name FROM hr.salaries")
    assert denied["state"] == "failed", denied
    masked = env.run("bob", "SELECT name FROM hr.salaries")
    assert masked["state"] == "success", masked.get("error")
    salaries = _history(env, "carol", object="hr.salaries", user="dave", outcome="denied")
    assert [(e["action"], e["door"]) for e in salaries if e["query_id"] == denied["id"]] == [
        ("table.select", "rest")
    ]
    bobs = [
        e for e in _history(env, "carol", object="hr.salaries") if e["query_id"] == masked["id"]
    ]
    assert [(e["outcome"], e["detail"]) for e in bobs] == [
        (
            "ok",
            {
                "privilege": "SELECT",
                "columns": ["name"],
                "masked": ["name"],
                "filtered": True,
            },
        )
    ]
    # Paged by cursor, newest first, none twice.
    seen: list[int] = []
    with env.api("carol") as api:
        params: dict[str, Any] = {"object": "hr.salaries", "limit": 3}
        while True:
            page = api.get("/v1/audit", params=params).json()
            seen += [e["id"] for e in page["events"]]
            if not page["next"]:
                break
            params["after"] = page["next"]
    assert seen == sorted(seen, reverse=True) and len(seen) == len(set(seen)) >= 8
    # bob sees his own reads only; dave owns a table and sees everyone's reads of it.
    assert {e["user"] for e in _history(env, "bob", object="hr.salaries")} == {"bob"}
    assert _history(env, "bob", object="hr.salaries", user="dave") == []
    env.rows("dave", "DROP TABLE IF EXISTS analysts.dave_owned")
    env.rows("dave", "CREATE TABLE analysts.dave_owned USING parquet AS SELECT 1 AS x")
    read = env.run("bob", "SELECT x FROM analysts.dave_owned")
    owner_view = _history(env, "dave", object="analysts.dave_owned", action="table.select")
    assert [(e["user"], e["query_id"]) for e in owner_view] == [("bob", read["id"])]
    # The CLI's export: every event of the table, a JSON object a line.
    out = env.cli("carol", "audit", "--object", "hr.salaries", "--export", "--limit", "3")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["id"] for e in lines] == seen[: len(lines)] and len(lines) >= len(seen)


def test_refusals_are_audited(env: Env) -> None:
    env.refused("dave", "SELECT * FROM hr.salaries")
    with env.api("carol") as api:
        events = api.get("/v1/audit", params={"user": "dave", "outcome": "denied"}).json()
        targets = {e["target"] for e in events["events"]}
        assert "table:spark_catalog.hr.salaries" in targets, events
        # Who did what to one table: refusals and grants alike.
        about = _history(env, "carol", object="hr.salaries")
        assert {e["target"] for e in about} == {"table:spark_catalog.hr.salaries"}, about
        assert {"table.select", "table.grant", "table.revoke"} <= {e["action"] for e in about}


def test_explain_says_which_rule_owner_or_grant_decides(env: Env) -> None:
    with env.api("carol") as api:
        bob = api.get(
            "/v1/access/explain",
            params={"who": "bob", "privilege": "select", "table": "hr.salaries"},
        ).json()
        assert bob["allowed"] and bob["privileges"] == ["SELECT"], bob
        assert bob["hidden_columns"] == ["ssn"] and bob["row_filter"] == "region = 'EU'"
        assert any(r.startswith("table rule #2 (user=bob, schema=hr") for r in bob["reasons"])
        dave = api.get(
            "/v1/access/explain",
            params={"who": "dave", "privilege": "DELETE", "table": "hr.salaries"},
        ).json()
        assert not dave["allowed"] and "no table rule matches" in dave["reasons"][0], dave
        bad = api.get(
            "/v1/access/explain", params={"who": "dave", "privilege": "EAT", "table": "hr.salaries"}
        )
        assert bad.status_code == 422, bad.text
        view = api.get("/v1/tables/hr.eu_pay/grants").json()
        assert view["owner"] == "alice" and view["table"] == "spark_catalog.hr.eu_pay", view
    with env.api("dave") as api:
        assert (
            api.get(
                "/v1/access/explain", params={"who": "dave", "privilege": "SELECT", "table": "hr.x"}
            ).status_code
            == 403
        )
        assert api.get("/v1/tables/hr.eu_pay/grants").status_code == 403


def test_groups_from_a_jwt_meet_the_table_rules(env: Env) -> None:
    """frank's group comes from his token only; his latest sign-in's groups count."""
    assert env.issuer is not None
    query = {"query": "SELECT count(*) FROM hr.salaries"}
    with httpx.Client(
        base_url=env.server.url,
        headers={"Authorization": f"Bearer {env.issuer.token('frank', groups=['platform'])}"},
        timeout=120,
    ) as frank:
        done = frank.post("/v1/queries", json=query, params={"wait": 60}).json()
        assert done["state"] == "success", done["error"]
        assert frank.get(f"/v1/queries/{done['id']}/result").json()["rows"] == [[3]]
    with httpx.Client(
        base_url=env.server.url,
        headers={"Authorization": f"Bearer {env.issuer.token('frank', groups=[])}"},
        timeout=120,
    ) as frank:
        # Signed in again without the group: the engine's rules see it gone at once.
        done = frank.post("/v1/queries", json=query, params={"wait": 60}).json()
        assert done["state"] == "failed", done
        assert done["error"]["code"] == "INSUFFICIENT_PRIVILEGE", done["error"]


# -- the other doors, with their own clients -------------------------------------------------


def test_spark_connect_dataframes_meet_the_same_rules(env: Env) -> None:
    from pyspark.errors import AnalysisException
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    before = _salaries(env)
    with env.connect("bob") as bob:
        frame = bob.read.table("hr.salaries")
        assert frame.columns == ["name", "region", "salary"]
        rows = sorted(tuple(r) for r in frame.select("*").collect())
        assert rows == [("a***", "EU", 0), ("c***", "EU", 0)]
        assert bob.sql("SELECT current_user()").collect()[0][0] == "bob"
        # Aliases, joins and DataFrame operations do not see past the masks.
        joined = frame.alias("a").join(frame.alias("b"), "region")
        assert joined.selectExpr("max(a.salary)", "count(*)").collect()[0] == (0, 4)
    with env.connect("dave") as dave:
        attempts: dict[str, Callable[[], object]] = {
            "read.table": lambda: dave.read.table("hr.salaries").collect(),
            "table.count": lambda: dave.table("hr.salaries").count(),
            "sql": lambda: dave.sql("SELECT * FROM hr.salaries").collect(),
            "read.parquet": lambda: dave.read.parquet(
                str(env.warehouse / "hr.db" / "salaries")
            ).collect(),
            "saveAsTable": lambda: (
                dave.createDataFrame(
                    [("x", "EU", 1, "9")], "name string, region string, salary int, ssn string"
                )
                .write.mode("append")
                .saveAsTable("hr.salaries")
            ),
            "write.parquet": lambda: (
                dave.range(1).write.mode("overwrite").parquet(str(env.home / "by-path"))
            ),
            "drop": lambda: dave.sql("DROP TABLE hr.salaries").collect(),
        }
        for name, attempt in attempts.items():
            with pytest.raises((AnalysisException, SparkConnectGrpcException)) as refused:
                attempt()
                raise AssertionError(f"not refused: {name}")
            assert refused.value.getCondition() == "INSUFFICIENT_PRIVILEGE", (name, refused.value)
            assert refused.value.getSqlState() == "42501"
        assert not (env.home / "by-path").exists()
        dave.range(3).createOrReplaceTempView("mine")  # a temporary view: no boundary
        assert dave.sql("SELECT count(*) FROM mine").collect()[0][0] == 3
        names = [t.name for t in dave.catalog.listTables("hr") if not t.isTemporary]
        assert names == ["eu_pay"], names
        assert dave.sql("SELECT current_user()").collect()[0][0] == "dave"
    assert _salaries(env) == before


def test_hiveserver2_refuses_with_sqlstate_and_lists_only_visible_tables(env: Env) -> None:
    before = _salaries(env)
    with env.hive("dave") as conn, conn.cursor() as cursor:
        with pytest.raises(hive.OperationalError) as refused:
            cursor.execute("SELECT * FROM hr.salaries")
        status = refused.value.args[0].status
        assert status.sqlState == "42501", status
        assert "SELECT on spark_catalog.hr.salaries" in status.errorMessage
        with pytest.raises(hive.OperationalError):
            cursor.execute("DELETE FROM hr.salaries")
        cursor.execute("SELECT count(*) FROM hr.eu_pay")
        assert cursor.fetchall() == [(2,)]
        cursor.execute("SELECT current_user()")
        assert cursor.fetchall() == [("dave",)]
    with env.hive("bob") as conn, conn.cursor() as cursor:
        cursor.execute("SELECT * FROM hr.salaries ORDER BY name")
        assert cursor.fetchall() == [("a***", "EU", 0), ("c***", "EU", 0)]
    assert _salaries(env) == before


def test_beeline_gets_the_refusal(env: Env, tmp_path: Path) -> None:
    url = f"jdbc:hive2://127.0.0.1:{env.thrift_port}/default"
    out = beeline(url, "dave", PASSWORDS["dave"], "SELECT * FROM hr.salaries;", tmp_path)
    assert "INSUFFICIENT_PRIVILEGE" in out and "42501" in out, out
    assert "111" not in out.replace(url, "")  # its port may hold the digits


def test_livy_statements_meet_the_rules(env: Env) -> None:
    from livy.models import SparkRuntimeError

    with LivySession.create(
        env.server.url, auth=("dave", PASSWORDS["dave"]), kind=LivyKind.SQL, echo=False
    ) as session:
        with pytest.raises(SparkRuntimeError) as refused:
            session.run("SELECT * FROM hr.salaries")
        assert "INSUFFICIENT_PRIVILEGE" in f"{refused.value.ename} {refused.value.evalue}"
        assert session.download_sql("SELECT count(*) AS n FROM hr.eu_pay")["n"][0] == 2


def test_a_stream_whose_source_is_denied_does_not_start(env: Env) -> None:
    error = env.refused("dave", "CREATE STREAM leak FROM TABLE hr.salaries")
    _denied(error)


# -- loading files (sparkgate load, POST /v1/tables/{name}/data) ------------------------------


def _load(
    env: Env, user: str, table: str, data: bytes, *, wait: float = 60, **params: Any
) -> httpx.Response:
    """``data`` uploaded into ``table`` as ``user``, waited for."""
    with env.api(user) as api:
        return api.post(
            f"/v1/tables/{table}/data",
            content=data,
            params={"wait": wait, **params},
            headers={"content-type": "application/octet-stream"},
        )


def _loaded(env: Env, user: str, table: str, data: bytes, **params: Any) -> dict[str, Any]:
    answer = _load(env, user, table, data, **params)
    assert answer.status_code in (200, 201), answer.text
    with env.api(user) as api:
        return wait_final(api, answer.json(), timeout=None)


def _uploads_left(env: Env) -> list[str]:
    root = env.server.settings.resolved_uploads_dir
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def _absent(env: Env, table: str) -> None:
    schema, name = table.split(".")
    assert env.rows("carol", f"SHOW TABLES IN {schema} LIKE '{name}'") == []


def test_files_load_into_new_tables_their_uploader_owns(env: Env, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A CSV with a header (columns and types inferred); bob (analysts) owns schema analysts
    # and has no `code` right: reading the uploaded file is not a read by path.
    csv_with_header = b"id,name,amount\n1,ann,10.5\n2,ben,20\n"
    query = _loaded(env, "bob", "analysts.orders_csv", csv_with_header, header="true")
    assert query["state"] == "success", query.get("error")
    assert query["kind"] == "load" and query["owner"] == "bob"
    assert query["output"]["load"]["columns"] == [
        ["id", "int"],
        ["name", "string"],
        ["amount", "double"],
    ]
    assert env.rows("bob", "SELECT * FROM analysts.orders_csv ORDER BY id") == [
        [1, "ann", 10.5],
        [2, "ben", 20.0],
    ]
    # One without a header, with its schema given.
    query = _loaded(
        env, "bob", "analysts.people", b"1,ann\n2,ben\n3,cid\n", schema="id INT, name STRING"
    )
    assert query["state"] == "success", query.get("error")
    assert env.rows("bob", "SELECT max(id), count(*) FROM analysts.people") == [[3, 3]]
    # A Parquet file.
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"k": [1, 2], "v": ["x", "y"]}), parquet)
    query = _loaded(env, "bob", "analysts.kv", parquet.read_bytes(), format="parquet")
    assert query["state"] == "success", query.get("error")
    assert env.rows("bob", "SELECT * FROM analysts.kv ORDER BY k") == [[1, "x"], [2, "y"]]
    with env.api("bob") as api:
        assert api.get("/v1/tables/analysts.orders_csv/grants").json()["owner"] == "bob"
        no_rows = api.get(f"/v1/queries/{query['id']}/result").json()["error"]
    assert no_rows["code"] == "RESULT_NOT_AVAILABLE"
    assert "loaded a file into a table" in no_rows["message"]
    assert _uploads_left(env) == []


def test_append_and_overwrite_read_the_file_with_the_tables_columns(env: Env) -> None:
    env.rows("carol", "CREATE TABLE analysts.ledger (id INT, amount DOUBLE) USING parquet")
    env.rows("carol", "INSERT INTO analysts.ledger VALUES (1, 1.0)")
    # dave (analysts: INSERT and DELETE on schema analysts, no ownership) appends a headerless
    # CSV read with the table's own columns, then a JSON-lines file; then replaces the rows.
    query = _loaded(env, "dave", "analysts.ledger", b"2,2.5\n3,3.5\n", mode="append")
    assert query["state"] == "success", query.get("error")
    query = _loaded(
        env, "dave", "analysts.ledger", b'{"id": 4, "amount": 4}\n', mode="append", format="json"
    )
    assert query["state"] == "success", query.get("error")
    assert env.rows("carol", "SELECT count(*), sum(amount) FROM analysts.ledger") == [[4, 11.0]]
    query = _loaded(env, "dave", "analysts.ledger", b"9,9.0\n", mode="overwrite")
    assert query["state"] == "success", query.get("error")
    assert env.rows("carol", "SELECT * FROM analysts.ledger") == [[9, 9.0]]


BAD_FILES = [
    # (what, table, data, params, code, in the message)
    ("extra field", "analysts.bad1", b"a,b\n1,x\n2,y,3\n", {"header": "true"}, "BAD_RECORD",
     "line 3 has 3 field(s)"),
    ("value of the wrong type", "analysts.bad2", b"1,x\n2,y\nabc,z\n",
     {"schema": "a INT, b STRING"}, "BAD_RECORD", "line 3, column a: 'abc' is not a valid INT"),
    ("json that is not json", "analysts.bad3", b'{"a": 1}\n{"a": \n', {"format": "json",
     "schema": "a INT"}, "BAD_RECORD", "line 2 is not a JSON object"),
    ("not a parquet file", "analysts.bad4", b"a,b\n1,2\n", {"format": "parquet"}, "BAD_FILE",
     "cannot read the file as parquet"),
    ("append of a value that does not fit", "analysts.ledger", b"10,ten\n", {"mode": "append"},
     "BAD_RECORD", "line 1, column amount: 'ten' is not a valid DOUBLE"),
    ("overwrite with a bad last row", "analysts.ledger", b"10,1.0\n11,eleven\n",
     {"mode": "overwrite"}, "BAD_RECORD", "line 2, column amount"),
]  # fmt: skip


def test_bad_files_fail_naming_line_and_column_and_change_nothing(env: Env) -> None:
    env.rows("carol", "CREATE TABLE IF NOT EXISTS analysts.ledger (id INT, amount DOUBLE)")
    before = sorted(env.rows("carol", "SELECT * FROM analysts.ledger"))
    for what, table, data, params, code, message in BAD_FILES:
        query = _loaded(env, "bob", table, data, **params)
        assert query["state"] == "failed", what
        assert query["error"]["code"] == code, (what, query["error"])
        assert message in query["error"]["message"], (what, query["error"])
        if table != "analysts.ledger":
            _absent(env, table)
    assert sorted(env.rows("carol", "SELECT * FROM analysts.ledger")) == before
    # Refused before anything runs: an empty file, an unknown format or mode, a bad name.
    refused: list[tuple[str, bytes, dict[str, Any], int, str]] = [
        ("analysts.bad5", b"", {}, 422, "FILE_EMPTY"),
        ("analysts.bad6", b"a\n", {"format": "xlsx"}, 422, "INVALID_REQUEST"),
        ("analysts.bad7", b"a\n", {"mode": "merge"}, 422, "INVALID_REQUEST"),
        ("analysts.x;DROP TABLE y", b"a\n", {}, 422, "INVALID_REQUEST"),
        ("analysts.bad8", b"a\n", {"format": "parquet", "schema": "a INT"}, 422, "INVALID_REQUEST"),
    ]
    for table, data, options, status, code in refused:
        answer = _load(env, "bob", table, data, **options)
        assert answer.status_code == status, (table, answer.text)
        assert answer.json()["error"]["code"] == code, answer.text
    for table in ("analysts.bad5", "analysts.bad6", "analysts.bad7", "analysts.bad8"):
        _absent(env, table)
    assert _uploads_left(env) == []


def test_loads_the_table_rules_refuse_change_nothing(env: Env) -> None:
    before = _salaries(env)
    # bob may read hr.salaries (masked), not write it, and does not own schema hr.
    query = _loaded(env, "bob", "hr.salaries", b"zed,EU,1,999\n", mode="append")
    _denied(query["error"], "INSERT")
    query = _loaded(env, "bob", "hr.uploaded", b"a\n1\n", header="true")
    assert query["state"] == "failed"
    assert query["error"]["code"] == "INSUFFICIENT_PRIVILEGE", query["error"]
    assert "OWNERSHIP on schema spark_catalog.hr" in query["error"]["message"]
    _absent(env, "hr.uploaded")
    assert _salaries(env) == before
    # The file a load may read is the engine's to name: no user sets it.
    with env.api("bob") as api:
        answer = api.post(
            "/v1/queries",
            json={"query": "SELECT 1", "conf": {"sparkgate.upload": "/etc/passwd"}},
        )
    assert answer.status_code == 403, answer.text
    assert _uploads_left(env) == []


def test_sparkgate_load_from_the_cli(env: Env, tmp_path: Path) -> None:
    good = tmp_path / "scores.csv"
    good.write_text("who,score\nann,1\nben,2\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("who,score\nann,one\n")
    cli_env = {**os.environ, "SPARKGATE_TOKEN": env.token("bob")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", "load", *args, "--server", env.server.url],
            check=False,
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=300,
        )

    done = cli(str(good), "--table", "analysts.scores", "--header")
    assert done.returncode == 0, done.stderr
    assert "loaded scores.csv" in done.stderr and "analysts.scores" in done.stderr
    failed = cli(str(bad), "--table", "analysts.scores", "--mode", "append", "--header")
    assert failed.returncode == 1
    assert "line 2, column score: 'one' is not a valid INT" in failed.stderr
    assert env.rows("bob", "SELECT count(*) FROM analysts.scores") == [[2]]


def test_every_user_here_shared_one_engine(env: Env) -> None:
    with env.api("carol") as api:
        engines = api.get("/v1/engines", params={"state": "running"}).json()["engines"]
    assert len([e for e in engines if e["state"] == "running"]) == 1, engines


# -- generated queries -------------------------------------------------------------------------

# Values only a reader past the rules could see: the hidden ssn column, and the row bob's
# filter keeps from him (the US salary; eu_pay, which everyone may read, shows only EU rows).
RAW = {"111", "222", "333", "7000", "US"}
SOURCES = ("hr.salaries", "sales.orders", "hr.eu_pay")


@st.composite
def queries(draw: st.DrawFn) -> str:
    one, two = draw(st.sampled_from(SOURCES)), draw(st.sampled_from(SOURCES))
    shape = draw(st.integers(0, 7))
    return [
        f"SELECT * FROM {one}",
        f"SELECT to_json(struct(*)) FROM {one}",
        f"SELECT * FROM {one} a JOIN {two} b ON a.name = b.name",
        f"SELECT name FROM {one} UNION ALL SELECT name FROM {two}",
        f"WITH c AS (SELECT * FROM {one}) SELECT * FROM c",
        f"SELECT * FROM {one} WHERE name IN (SELECT name FROM {two})",
        f"SELECT * FROM (SELECT * FROM {one}) t, LATERAL (SELECT count(*) FROM {two})",
        f"SELECT collect_list(to_json(struct(*))) FROM {one} GROUP BY 'x'",
    ][shape]


@settings(
    max_examples=int(os.environ.get("SPARKGATE_ACCESS_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sql=queries(), user=st.sampled_from(["bob", "dave"]))
def test_generated_queries_never_show_what_the_rules_hide(env: Env, sql: str, user: str) -> None:
    query = env.run(user, sql)
    if query["state"] == "failed":
        assert query["error"]["code"] in {"INSUFFICIENT_PRIVILEGE", "UNRESOLVED_COLUMN"} or query[
            "error"
        ]["code"].startswith(("UNRESOLVED_COLUMN", "AMBIGUOUS")), (sql, query["error"])
        return
    assert query["state"] == "success", (sql, query)
    seen = " ".join(str(value) for row in query["rows"] or [] for value in row)
    leaked = [token for token in RAW if token in seen.replace('"', " ").split()] + [
        token for token in RAW if f'"{token}"' in seen or f":{token}" in seen
    ]
    assert not leaked, (user, sql, leaked, seen)
    if user == "dave" and "hr.salaries" in sql:
        raise AssertionError(f"dave read hr.salaries: {sql}")


# -- the catalog (/v1/tables, sparkgate tables, the dashboard's catalog page) -----------------


def _catalog(env: Env, user: str, path: str = "", **params: str) -> httpx.Response:
    with env.api(user) as api:
        return api.get(f"/v1/tables{path}", params=params, timeout=300)


def _tables_of(listing: dict[str, Any]) -> dict[str, set[tuple[str, str]]]:
    return {s["name"]: {(t["name"], t["kind"]) for t in s["tables"]} for s in listing["schemas"]}


def test_the_catalog_shows_each_user_what_their_rules_let_them_see(env: Env) -> None:
    mine = env.run("bob", "SELECT count(*) FROM hr.salaries")
    # dave has no rule on hr.salaries: not listed, and "not found" as a table that is not there.
    listed = _catalog(env, "dave")
    assert listed.status_code == 200, listed.text
    tables = _tables_of(listed.json())
    assert ("eu_pay", "view") in tables["hr"] and ("salaries", "table") not in tables["hr"]
    assert ("orders", "table") in tables["sales"]
    hidden, absent = _catalog(env, "dave", "/hr.salaries"), _catalog(env, "dave", "/hr.nothing")
    assert hidden.status_code == absent.status_code == 404, hidden.text
    assert hidden.json()["error"]["code"] == absent.json()["error"]["code"] == "TABLE_NOT_FOUND"
    # bob reads it with ssn hidden, names masked, EU rows only: so does its page.
    detail = _catalog(env, "bob", "/hr.salaries").json()
    assert (detail["name"], detail["kind"], detail["owner"]) == ("hr.salaries", "table", "carol")
    assert [c["name"] for c in detail["columns"]] == ["name", "region", "salary"]
    assert sorted(detail["preview"]["rows"]) == [["a***", "EU", 0], ["c***", "EU", 0]]
    assert detail["provider"] == "parquet" and detail["size_bytes"] > 0 and detail["files"] >= 1
    assert detail["last_change"] >= detail["created_at"]
    # His own queries of it (carol's made it), not the catalog's own reads.
    recent = [(q["id"], q["user"], q["access"], q["state"]) for q in detail["recent_queries"]]
    assert (mine["id"], "bob", "read", "success") in recent
    assert {q[1] for q in recent} == {"bob"} and detail["query_id"] not in {q[0] for q in recent}
    # A view has no files; its preview is its owner's reading, as the rules say.
    view = _catalog(env, "dave", "/hr.eu_pay").json()
    assert view["kind"] == "view" and view["size_bytes"] is None and view["owner"] == "alice"
    assert sorted(view["preview"]["rows"]) == [["ann", 5000], ["cid", 6000]]
    for path, params, status in (
        ("", {"schema": "nope"}, 404),
        ("", {"schema": "hr;DROP"}, 422),
        ("/a.b.c", {}, 422),
    ):
        refused = _catalog(env, "bob", path, **params)
        assert refused.status_code == status, (path, params, refused.text)


def test_sparkgate_tables_list_and_show(env: Env) -> None:
    cli_env = {**os.environ, "SPARKGATE_TOKEN": env.token("bob")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", "tables", *args],
            check=False,
            capture_output=True,
            text=True,
            env={**cli_env, "SPARKGATE_SERVER": env.server.url},
            timeout=300,
        )

    listed = cli("list", "--schema", "HR", "--json")
    assert listed.returncode == 0, listed.stderr
    only_hr = json.loads(listed.stdout)
    assert [s["name"] for s in only_hr["schemas"]] == ["hr"]
    assert {("eu_pay", "view"), ("salaries", "table")} <= _tables_of(only_hr)["hr"]
    shown = cli("show", "hr.salaries")
    assert shown.returncode == 0, shown.stderr
    assert "owned by carol" in shown.stdout and "a***" in shown.stdout
    assert "ssn" not in shown.stdout and "111" not in shown.stdout


def test_the_catalog_page_in_chromium_shows_a_user_only_what_they_may_see(env: Env) -> None:
    from playwright.sync_api import expect

    from tests.web.conftest import watch_csp

    path = chromium()
    if path is None:
        pytest.skip("Debian's chromium is not installed; the catalog page's browser test needs it")
    read = env.run("bob", "SELECT count(*) FROM hr.salaries")
    slow = 120_000  # ms: each page runs a catalog query as its user, on two busy cores
    violations: list[str] = []
    # Its own browser, closed at its end: one left open would keep Playwright's event loop
    # running for the tests after it (tests/web/conftest.py).
    with launched(path) as browser:

        def sign_in(user: str) -> Any:
            page = browser.new_context(base_url=env.server.url).new_page()
            watch_csp(page, violations)
            page.goto("/ui/login")
            page.get_by_label("User name").fill(user)
            page.get_by_label("Password or access token").fill(PASSWORDS[user])
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url("**/ui/queries")
            return page

        bob = sign_in("bob")
        bob.get_by_role("link", name="Catalog").click()
        salaries = bob.locator('tr[data-table="hr.salaries"]')
        expect(salaries).to_be_visible(timeout=slow)
        salaries.get_by_role("link").click()
        expect(bob.locator("main h1")).to_have_text("hr.salaries", timeout=slow)
        expect(bob.get_by_test_id("owner")).to_have_text("carol")
        expect(bob.get_by_test_id("size")).to_contain_text("B in ")
        columns = bob.get_by_test_id("columns")
        expect(columns.locator("tbody tr")).to_have_count(3)
        expect(columns).not_to_contain_text("ssn")
        preview = bob.locator("#preview tbody")
        expect(preview.locator("tr")).to_have_count(2)
        expect(preview).to_contain_text("a***")
        expect(preview).not_to_contain_text("ben")
        recent = bob.locator(f'[data-testid="recent"] tr[data-query-id="{read["id"]}"]')
        expect(recent).to_be_visible()

        dave = sign_in("dave")
        dave.goto("/ui/tables?schema=hr")
        expect(dave.locator('tr[data-table="hr.eu_pay"]')).to_be_visible(timeout=slow)
        expect(dave.locator('tr[data-table="hr.salaries"]')).to_have_count(0)
        missing = dave.goto("/ui/tables/hr.salaries", timeout=slow)
        assert missing is not None and missing.status == 404
        expect(dave.locator("main")).to_contain_text("does not exist")
    assert violations == [], "the catalog pages broke the Content-Security-Policy"


# -- errors: no plan, rule or hidden name at any door ------------------------------------------

# What bob's and erin's rules on hr.salaries hide, as it would appear in an error's text: the
# hidden column, the masks' expressions, the row filter, and any plan Spark analysed the
# statement in (which holds all of them: ``Relation [..., ssn#241]``, ``Filter (region#3 =
# EU)``).
HIDDEN_IN_ERRORS = [
    r"\bssn\b",
    r"is_member",
    r"CASE WHEN",
    r"substr",
    r"concat",
    r"region\W*=\W*'?EU",
    r"Relation \[",
    r"\+- ",
    r":- ",
    r"\w#\d+",
    r"\b(Project|Filter|SubqueryAlias|LogicalRDD|HiveTableRelation)\b",
]

# Statements that fail, each a shape an attacker would try: (name, SQL, whether its error may
# name ssn: the statement names it, and gets it back as a column that is not there).
FAILING = [
    ("hidden by name", "SELECT ssn FROM hr.salaries", True),
    (
        "hidden in a join",
        "SELECT s.ssn, o.amount FROM hr.salaries s JOIN sales.orders o ON s.name = o.name",
        True,
    ),
    (
        "type error in the filter's column",
        "SELECT * FROM hr.salaries WHERE region > array(1)",
        False,
    ),
    ("bad cast", "SELECT CAST(region AS ARRAY<INT>) FROM hr.salaries", False),
    ("bad cast of a masked value", "SELECT CAST(name AS INT) FROM hr.salaries", False),
    ("division by zero in the masked column", "SELECT salary / 0 FROM hr.salaries", False),
    (
        "insert overwrite reading its target",
        "INSERT OVERWRITE TABLE hr.salaries SELECT * FROM hr.salaries WHERE false",
        False,
    ),
    ("insert of the wrong columns", "INSERT INTO hr.salaries SELECT 'x', 1", False),
]


def _leaks(text: str, *, typed_ssn: bool = False) -> list[str]:
    """The patterns of HIDDEN_IN_ERRORS that ``text`` matches, less ssn for a statement
    whose error may name it (FAILING)."""
    import re

    if typed_ssn:
        text = re.sub(r"\bssn\b", "", text)
    return [pattern for pattern in HIDDEN_IN_ERRORS if re.search(pattern, text)]


def _as_if_absent(text_of: Callable[[str], str], sql: str) -> None:
    """The error for the hidden column is the error for a column that does not exist."""
    import re

    def normal(text: str) -> str:
        # What differs between two runs of one failing statement: ids, and the order of
        # Spark's suggestions (nearest to the name typed first).
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}|\bo\d+\b|\bid \d+", "<id>", text)
        return re.sub(
            r"\[(`[^\]]*`)\]", lambda m: "[" + ", ".join(sorted(m[1].split(", "))) + "]", text
        )

    hidden, absent = text_of(sql), text_of(sql.replace("ssn", "nosuch"))
    assert normal(hidden) == normal(absent.replace("nosuch", "ssn")), (hidden, absent)


def _rest_error(env: Env, sql: str) -> str:
    query = env.run("bob", sql)
    assert query["state"] == "failed", (sql, query)
    with env.api("bob") as api:
        again = api.get(f"/v1/queries/{query['id']}")
    return json.dumps(query["error"]) + "\n" + again.text


@pytest.mark.parametrize(("shape", "sql", "typed_ssn"), FAILING, ids=[f[0] for f in FAILING])
def test_a_rest_error_shows_no_plan_or_rule(
    env: Env, shape: str, sql: str, typed_ssn: bool
) -> None:
    text = _rest_error(env, sql)
    assert not _leaks(text, typed_ssn=typed_ssn), (shape, _leaks(text, typed_ssn=typed_ssn), text)
    if typed_ssn:
        _as_if_absent(lambda s: json.dumps(env.refused("bob", s)["message"]), sql)


def test_a_hiveserver2_error_shows_no_plan_or_rule(env: Env) -> None:
    def text_of(sql: str) -> str:
        with env.hive("bob") as conn, conn.cursor() as cursor:
            with pytest.raises(hive.OperationalError) as failed:
                cursor.execute(sql)
                cursor.fetchall()
            status = failed.value.args[0].status
            return f"{failed.value}\n{status.errorMessage}\n{status.infoMessages}"

    for shape, sql, typed_ssn in FAILING:
        text = text_of(sql)
        assert not _leaks(text, typed_ssn=typed_ssn), (shape, text)
    _as_if_absent(text_of, FAILING[0][1])


def _livy_errors(env: Env, user: str, kind: str, codes: list[str]) -> list[str]:
    """Each statement's output, run in one Livy session of ``kind`` as ``user``, as JSON."""
    outputs = []
    with httpx.Client(base_url=env.server.url, auth=(user, PASSWORDS[user]), timeout=120) as http:
        created = http.post("/sessions", json={"kind": kind})
        assert created.status_code == 201, created.text
        session = created.json()["id"]
        try:
            deadline = time.monotonic() + 240
            while http.get(f"/sessions/{session}/state").json()["state"] != "idle":
                assert time.monotonic() < deadline
                time.sleep(0.2)
            for code in codes:
                posted = http.post(f"/sessions/{session}/statements", json={"code": code})
                assert posted.status_code == 201, posted.text
                path = f"/sessions/{session}/statements/{posted.json()['id']}"
                statement = http.get(path).json()
                while statement["state"] not in {"available", "cancelled"}:
                    assert time.monotonic() < deadline + 240, statement
                    time.sleep(0.2)
                    statement = http.get(path).json()
                output = statement["output"]
                assert output["status"] == "error", (code, output)
                outputs.append(json.dumps(output))
        finally:
            http.delete(f"/sessions/{session}")
    return outputs


def test_livy_sql_statements_errors_show_no_plan_or_rule(env: Env) -> None:
    texts = _livy_errors(env, "bob", "sql", [sql for _, sql, _ in FAILING])
    for (shape, _, typed_ssn), text in zip(FAILING, texts, strict=True):
        assert not _leaks(text, typed_ssn=typed_ssn), (shape, text)


def test_livy_pyspark_statements_errors_and_tracebacks_show_no_plan_or_rule(env: Env) -> None:
    codes = [f"spark.sql({sql!r}).collect()" for _, sql, _ in FAILING] + [
        "spark.table('hr.salaries').select('ssn').collect()",
        "spark.conf.set('spark.sql.pyspark.jvmStacktrace.enabled', 'true')\n"
        "spark.sql('SELECT ssn FROM hr.salaries').collect()",
    ]
    typed = [typed_ssn for _, _, typed_ssn in FAILING] + [True, True]
    texts = _livy_errors(env, "erin", "pyspark", codes)
    for code, typed_ssn, text in zip(codes, typed, texts, strict=True):
        output = json.loads(text)
        assert output["traceback"], output
        assert not _leaks(text, typed_ssn=typed_ssn), (code, text)


def test_spark_connect_errors_show_no_plan_or_rule(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark.errors import PySparkException
    from pyspark.sql.connect import functions as F

    def context_text(context: Any) -> str:
        found = []
        for name in ("objectName", "fragment", "callSite", "summary"):
            with contextlib.suppress(PySparkException):  # not every kind has each
                found.append(str(getattr(context, name)()))
        return " ".join(found)

    def text_of(attempt: Callable[[], object]) -> str:
        capsys.readouterr()
        with pytest.raises(PySparkException) as failed:
            attempt()
        exc = failed.value
        contexts = [context_text(c) for c in exc.getQueryContext()]
        return "\n".join(
            [
                # the client logs the error it received (SQLQueryContextLogger, on stderr)
                capsys.readouterr().err,
                str(exc),
                exc.getMessage(),
                json.dumps(exc.getMessageParameters()),
                str(exc.getSqlState()),
                str(getattr(exc, "getStackTrace", lambda: "")()),
                *contexts,
            ]
        )

    with env.connect("bob") as bob:
        frame = bob.read.table("hr.salaries")
        orders = bob.read.table("sales.orders")
        attempts: list[tuple[str, Callable[[], object], bool]] = [
            *[(shape, lambda sql=sql: bob.sql(sql).collect(), t) for shape, sql, t in FAILING],
            (
                "a DataFrame selecting the hidden column",
                lambda: frame.select("ssn").collect(),
                True,
            ),
            (
                "a DataFrame's columns (AnalyzePlan) with the hidden column",
                lambda: frame.select("ssn").columns,
                True,
            ),
            (
                "a DataFrame join selecting the hidden column",
                lambda: frame.join(orders, "name").select(frame["ssn"]).collect(),
                True,
            ),
            (
                "a DataFrame type error in the filter's column",
                lambda: frame.where(F.col("region") > F.array(F.lit(1))).collect(),
                False,
            ),
            (
                "a DataFrame division by zero in the masked column",
                lambda: frame.select(F.col("salary") / 0).collect(),
                False,
            ),
            (
                "saveAsTable with the wrong columns",
                lambda: (
                    bob.createDataFrame([(1,)], "x int")
                    .write.mode("append")
                    .saveAsTable("hr.salaries")
                ),
                False,
            ),
        ]
        for stacktraces in (False, True):
            if stacktraces:
                # What a client asks for to see the server's stack trace with each error.
                bob.conf.set("spark.sql.connect.serverStacktrace.enabled", "true")
                with contextlib.suppress(PySparkException):
                    bob.conf.set("spark.sql.pyspark.jvmStacktrace.enabled", "true")
            for shape, attempt, typed_ssn in attempts:
                text = text_of(attempt)
                assert not _leaks(text, typed_ssn=typed_ssn), (shape, stacktraces, text)
        _as_if_absent(
            lambda name: str(text_of(lambda: frame.select(name.split()[1]).collect())),
            "SELECT ssn",
        )


def test_a_write_without_insert_names_no_hidden_column(env: Env) -> None:
    """bob may read hr.salaries, not write it: his write is refused by name, before Spark
    matches its columns with the table's (an arity error would list ssn)."""
    before = _salaries(env)
    for sql in (
        "INSERT OVERWRITE TABLE hr.salaries SELECT * FROM hr.salaries WHERE false",
        "INSERT INTO hr.salaries SELECT 'x', 1",
        "INSERT INTO hr.salaries (name) SELECT 'x'",
    ):
        error = env.refused("bob", sql)
        _denied(error, "INSERT")
        assert not _leaks(json.dumps(error)), error
    assert _salaries(env) == before


def test_explain_shows_a_rewritten_plan_only_to_whom_the_rules_do_not_bind(env: Env) -> None:
    """An explanation would show the hidden column, the masks and the filter: refused for a
    user the rules rewrote the plan for (without ``code``), at the SQL doors and through
    Spark Connect's ``explain()``; a plan the rules left alone is explained as ever."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    refused = env.refused("bob", "EXPLAIN EXTENDED SELECT * FROM hr.salaries")
    _denied(refused, "EXPLAIN")
    assert "ssn" not in json.dumps(refused) and "EU" not in json.dumps(refused)
    _denied(env.refused("dave", "EXPLAIN SELECT * FROM hr.salaries"))
    plain = env.rows("bob", "EXPLAIN SELECT * FROM sales.orders")
    assert "orders" in plain[0][0]
    told = env.rows("alice", "EXPLAIN EXTENDED SELECT * FROM hr.salaries")
    assert "ssn" in told[0][0]  # alice has code, and no rule on her
    with env.connect("bob") as bob:
        frame = bob.read.table("hr.salaries")
        with pytest.raises(SparkConnectGrpcException) as caught:
            frame._explain_string(extended=True)
        assert "ssn" not in str(caught.value) and "code" in str(caught.value)
        assert frame.columns == ["name", "region", "salary"]  # the session still works
