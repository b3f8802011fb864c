"""What only the analysed plan tells result reuse (issue 62): whether a statement's result may be
served again (a pure read of catalog tables and views: deterministic, no user code, no
temporary view, no files by path, no write), where each table it read keeps its files, whose
decision each read used, and the context of the session a result is kept under. Real Spark,
the engine's extension on a session of its own, statements taken as the engine takes them
(``StatementThread.begin`` / ``end``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import DataFrame, SparkSession

from sparkgate.engine.authz.decider import _authz
from sparkgate.engine.authz.touched import Touched
from sparkgate.runtime.statement_thread import engine_context, of

pytestmark = pytest.mark.spark

DB = "reuse_db"
T, U, SECRET, V = (f"spark_catalog.{DB}.{n}" for n in ("t", "u", "secret", "v"))
# A column mask per table: one asking who reads, one the same for everyone.
MASKS = {"masked": "CASE WHEN is_member('hr') THEN s ELSE '***' END", "starred": "'***'"}
SYSTEM = "@system"


class Rules:
    """The policy as the JVM asks it: alice reads t, u, the masked tables and the view v,
    which bob owns and which reads secret, which only bob reads."""

    class Java:
        implements = ["sparkgate.authz.Decider"]

    def active(self) -> bool:
        return True

    def decide(self, user: str, catalog: str, schema: str, table: str) -> str:
        # bob owns v: an owner holds every privilege on what it owns.
        readable = {"alice": {"t", "u", "v", "w", *MASKS}, "bob": {"secret", "v"}}
        privileges = ["SELECT", "INSERT"] if table in readable.get(user, set()) else []
        masks = {"s": MASKS[table]} if table in MASKS else {}
        return json.dumps({"privileges": privileges, "hidden": [], "masks": masks, "filter": None})

    def ownsSchema(self, user: str, catalog: str, schema: str) -> bool:
        return True

    def hasCode(self, user: str) -> bool:
        return True

    def isMember(self, user: str, group: str) -> bool:
        return False

    def ownerOf(self, catalog: str, schema: str, table: str) -> str | None:
        return "bob" if table == "v" else None

    def changed(self, *args: Any) -> None:
        pass

    def denied(self, user: str, privilege: str, obj: str) -> None:
        pass


@dataclass
class Ended:
    touched: Touched
    context: str


@pytest.fixture(scope="module")
def data(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tables and the view, made by the plain (unchecked) session: one catalog for both."""
    location = tmp_path_factory.mktemp("reuse-db")
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB} LOCATION '{location}'")
    for table, columns in (("t", "a INT, b STRING"), ("u", "a INT, c STRING")):
        spark.sql(f"CREATE TABLE {DB}.{table} ({columns}) USING parquet")
    for table in ("secret", *MASKS):
        spark.sql(f"CREATE TABLE {DB}.{table} (a INT, s STRING) USING parquet")
    spark.sql(f"CREATE TABLE {DB}.w (a INT, b STRING) USING parquet")
    spark.sql(f"INSERT INTO {DB}.t VALUES (1, 'x'), (2, 'y')")
    spark.sql(f"CREATE VIEW {DB}.v AS SELECT a, s FROM {DB}.secret")
    try:
        yield location
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


@pytest.fixture(scope="module")
def checked(spark: SparkSession, data: Path) -> Iterator[SparkSession]:
    """A session with the engine's extension (as an engine's sessions have it), as alice, with
    a temporary view, a global one and a Python UDF of its own."""
    session = with_extension(spark)
    session.conf.set("sparkgate.user", "alice")
    session.sql(f"CREATE TEMP VIEW tv AS SELECT * FROM {DB}.t")
    session.sql(f"CREATE OR REPLACE GLOBAL TEMP VIEW reuse_gv AS SELECT * FROM {DB}.t")
    session.udf.register("plus_one", lambda x: x + 1, "int")
    try:
        yield session
    finally:
        session.sql("DROP VIEW IF EXISTS global_temp.reuse_gv")


@pytest.fixture
def rules(spark: SparkSession) -> Iterator[None]:
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    module = _authz(spark)
    module.install(Rules())
    try:
        yield
    finally:
        module.install(None)


def with_extension(spark: SparkSession) -> SparkSession:
    """A root session of the suite's Spark with the engine's extension, as an engine's root
    session has it (``spark.sql.extensions`` is read once per SparkContext), sharing the
    suite's catalog; its ``newSession()``s have the extension too."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None

    def scala(name: str) -> Any:
        return jvm.java.lang.Class.forName(name).getField("MODULE$").get(None)

    extensions = jvm.org.apache.spark.sql.SparkSessionExtensions()
    jvm.sparkgate.authz.Extensions().apply(extensions)
    no_options = scala("scala.collection.immutable.Map$").empty()
    created = jvm.org.apache.spark.sql.classic.SparkSession(
        spark._jsparkSession.sparkContext(),
        jvm.scala.Option.apply(spark._jsparkSession.sharedState()),
        jvm.scala.Option.empty(),
        extensions,
        no_options,
        no_options,
    )
    return SparkSession(spark.sparkContext, created)


def run(session: SparkSession, statement: str | Callable[[], DataFrame]) -> Ended:
    """One statement on this thread as the engine runs it; what ``end`` says after it."""
    jsc = session.sparkContext._jsc
    thread = of(session)
    thread.begin(jsc, "reuse-test", "reuse test", "default", "alice")
    try:
        frame = session.sql(statement) if isinstance(statement, str) else statement()
        frame.collect()
    finally:
        touched, _cost, context = thread.end(jsc, "reuse-test", session._jsparkSession).split(
            "\n", 2
        )
    return Ended(Touched.parse(touched), context)


READS: list[tuple[str, dict[str, str]]] = [
    ("SELECT * FROM t", {T: "t"}),
    ("SELECT t.a, u.c FROM t JOIN u ON t.a = u.a", {T: "t", U: "u"}),
    ("WITH c AS (SELECT a FROM t WHERE a > 1) SELECT count(*) FROM c", {T: "t"}),
    ("SELECT * FROM t WHERE a IN (SELECT a FROM u)", {T: "t", U: "u"}),
    ("SELECT (SELECT max(a) FROM u) AS m, upper(b) FROM t", {T: "t", U: "u"}),
    ("SELECT a, b FROM VALUES (1, 'x'), (2, 'y') AS s(a, b)", {}),
    ("VALUES (1), (2)", {}),
]

NOT_REUSABLE = [
    "SELECT rand() FROM t",
    "SELECT uuid()",
    "SELECT now()",
    "SELECT current_timestamp()",
    "SELECT unix_timestamp()",
    "SELECT current_user()",
    "SELECT plus_one(a) FROM t",
    "SELECT * FROM tv",
    "SELECT * FROM global_temp.reuse_gv",
    "SELECT * FROM parquet.`{t}`",
    "INSERT INTO w VALUES (1, 'x')",
    "CREATE TABLE ctas AS SELECT * FROM t",
]


def _in_db(session: SparkSession) -> None:
    session.sql(f"USE {DB}")


@pytest.mark.parametrize("with_rules", [False, True], ids=["no rules", "rules"])
@pytest.mark.parametrize(("sql", "tables"), READS, ids=[sql for sql, _ in READS])
def test_a_pure_read_is_reusable_with_its_tables_locations_and_readers(
    checked: SparkSession,
    data: Path,
    request: pytest.FixtureRequest,
    with_rules: bool,
    sql: str,
    tables: dict[str, str],
) -> None:
    if with_rules:
        request.getfixturevalue("rules")
    _in_db(checked)
    ended = run(checked, sql)
    assert ended.touched.reusable
    assert ended.touched.locations == {
        name: f"file:{data / short}" for name, short in tables.items()
    }
    reader = "alice" if with_rules else SYSTEM
    assert ended.touched.readers == {name: (reader,) for name in tables}


@pytest.mark.parametrize("with_rules", [False, True], ids=["no rules", "rules"])
def test_a_view_is_read_as_its_owner(
    checked: SparkSession, data: Path, request: pytest.FixtureRequest, with_rules: bool
) -> None:
    if with_rules:
        request.getfixturevalue("rules")
    _in_db(checked)
    ended = run(checked, "SELECT * FROM v")
    assert ended.touched.reusable
    # A view keeps no files: what it reads does.
    assert ended.touched.locations == {SECRET: f"file:{data / 'secret'}"}
    if with_rules:
        # SECURITY DEFINER: alice's decision on the view, its owner's on what it reads (the
        # walk also meets the view again beneath the alias it marked, as the owner).
        assert ended.touched.readers == {V: ("alice", "bob"), SECRET: ("bob",)}
    else:
        assert ended.touched.readers == {V: (SYSTEM,), SECRET: (SYSTEM,)}


@pytest.mark.parametrize("with_rules", [False, True], ids=["no rules", "rules"])
@pytest.mark.parametrize("sql", NOT_REUSABLE)
def test_what_may_answer_otherwise_is_not_reusable(
    checked: SparkSession,
    data: Path,
    request: pytest.FixtureRequest,
    with_rules: bool,
    sql: str,
) -> None:
    if with_rules:
        request.getfixturevalue("rules")
    _in_db(checked)
    try:
        ended = run(checked, sql.format(t=data / "t"))
    finally:
        checked.sql(f"DROP TABLE IF EXISTS {DB}.ctas")
    assert not ended.touched.reusable


@pytest.mark.parametrize(("table", "reusable"), [("masked", False), ("starred", True)])
def test_a_mask_that_asks_who_reads_is_not_reusable(
    checked: SparkSession, data: Path, rules: None, table: str, reusable: bool
) -> None:
    _in_db(checked)
    ended = run(checked, f"SELECT * FROM {table}")
    assert ended.touched.readers == {f"spark_catalog.{DB}.{table}": ("alice",)}
    assert ended.touched.reusable is reusable


def test_a_dataframe_over_local_rows_is_not_reusable(checked: SparkSession, data: Path) -> None:
    ended = run(checked, lambda: checked.createDataFrame([(1, "x")], "a INT, b STRING"))
    assert not ended.touched.reusable


def test_nothing_checked_is_not_reusable(checked: SparkSession) -> None:
    system = checked.newSession()
    system.conf.set("sparkgate.user", SYSTEM)  # the engine's own work is never checked
    assert not run(system, "SELECT 1").touched.reusable
    assert not Touched.parse('{"read": [], "written": []}').reusable


# -- the session's context ----------------------------------------------------------------


def test_fresh_sessions_share_a_context(spark: SparkSession, checked: SparkSession) -> None:
    first, second = checked.newSession(), checked.newSession()
    context = engine_context(first)
    assert context is not None and len(context) == 64
    assert engine_context(second) == context
    # Another root session of the same conf (as another engine's) gives its sessions the same.
    assert engine_context(with_extension(spark).newSession()) == context


CHANGES = [
    f"USE {DB}",
    "SET spark.sql.session.timeZone = Asia/Tokyo",
    "SET spark.sql.ansi.enabled = false",
    "CREATE TEMP VIEW reuse_tv AS SELECT 1 AS x",
]


@pytest.mark.parametrize("change", CHANGES)
def test_what_changes_an_answer_changes_the_context(
    checked: SparkSession, data: Path, change: str
) -> None:
    session = checked.newSession()
    session.conf.set("sparkgate.user", "alice")
    before = engine_context(session)
    ended = run(session, change)
    assert ended.context == engine_context(session)
    assert ended.context not in ("", before)


@pytest.mark.parametrize("value", ["false", "FALSE", "False"])
def test_the_user_turns_reuse_off_for_a_session(
    checked: SparkSession, rules: None, value: str
) -> None:
    session = checked.newSession()
    session.conf.set("sparkgate.user", "alice")
    assert engine_context(session)
    ended = run(session, f"SET use_cached_result = {value}")  # allowed under table rules
    assert ended.context == ""
    assert engine_context(session) is None
    assert run(session, "SET use_cached_result = true").context == engine_context(
        checked.newSession()
    )
