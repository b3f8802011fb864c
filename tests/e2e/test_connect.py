"""The Spark Connect door end to end: pyspark's own Connect client (``sc://``) against a
running server with authentication on, its engines running Spark's Connect service."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkgate_dev import (
    TEST_SPARK_CONF,
    ServerProcess,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
    user_files,
)
from tests.e2e.conftest import livy_output

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
        return httpx.Client(base_url=self.server.url, auth=(user, PASSWORDS[user]), timeout=60)

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
    users = user_files(home, PASSWORDS, ACCESS)
    connect_port = free_port()
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **users,
        connect_port=connect_port,
        warm_engines=0,
        # Every user's sessions in one engine: what one session does must not reach another's.
        engine_share_level="server",
        # Spark ends a result stream after this long (default 2 min; the client reattaches),
        # and drops an operation left without a stream after the second (default 5 min).
        spark_conf={
            **TEST_SPARK_CONF,
            "spark.connect.execute.reattachable.senderMaxStreamDuration": "10s",
            "spark.connect.execute.manager.detachedTimeout": "5s",
            "spark.connect.execute.manager.maintenanceInterval": "1s",
        },
    )
    server = ServerProcess(settings).start()
    try:
        yield Env(server, connect_port, home)
    finally:
        server.stop()
        kill_engines(settings)


class PingingClient:
    """A gRPC connection to the door that pings every 10 s, idle or not, as PySpark's client
    does every 60 s (SPARK-58094), and as often as Spark's own Connect server permits; it
    notes every change of the connection's state. Opened when the module's first test starts,
    so that by its last test it has idled through several pings at no cost of its own."""

    PING_MS = 10_000

    def __init__(self, env: Env) -> None:
        import grpc

        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{env.connect_port}",
            options=[
                ("grpc.keepalive_time_ms", self.PING_MS),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.max_pings_without_data", 0),  # no cap on pings while idle
            ],
        )
        self.opened = time.monotonic()
        self.states: list[str] = []
        self.channel.subscribe(lambda state: self.states.append(state.name), try_to_connect=True)
        # One call, so that the connection has served something before it idles: an empty
        # request with alice's token, refused for its missing session id (nothing is made).
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(
            "/spark.connect.SparkConnectService/Config"
        )
        with pytest.raises(grpc.RpcError) as refused:
            call(b"", metadata=(("authorization", f"Bearer {env.token('alice')}"),), timeout=60)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT, refused.value


@pytest.fixture(scope="module", autouse=True)
def pinging(env: Env) -> Iterator[PingingClient]:
    client = PingingClient(env)
    try:
        yield client
    finally:
        client.channel.close()


def _queries(env: Env, user: str = "alice", **params: Any) -> list[dict[str, Any]]:
    with env.api(user) as api:
        answer = api.get("/v1/queries", params={"limit": 500, **params})
        assert answer.status_code == 200, answer.text
        return list(answer.json()["queries"])


def test_dataframes_sql_pandas_and_udfs_run_and_are_recorded(env: Env) -> None:
    import pandas as pd  # type: ignore[import-untyped]
    from pyspark.sql.connect.functions import col, udf
    from pyspark.sql.types import LongType

    with env.spark("alice") as spark:
        assert [r.id for r in spark.range(5).collect()] == [0, 1, 2, 3, 4]
        assert spark.sql("SELECT 1 + 1 AS two").collect()[0].two == 2
        frame = pd.DataFrame({"region": ["north", "south", "north"], "amount": [10, 20, 5]})
        spark.createDataFrame(frame).write.mode("overwrite").saveAsTable("connect_sales")
        totals = spark.read.table("connect_sales").groupBy("region").sum("amount").toPandas()
        assert dict(zip(totals["region"], totals["sum(amount)"], strict=True)) == {
            "north": 15,
            "south": 20,
        }
        assert "connect_sales" in [t.name for t in spark.catalog.listTables()]
        double: Any = udf(lambda x: x * 2, LongType())
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


def _audit(env: Env, **params: Any) -> list[dict[str, Any]]:
    with env.api("carol") as api:
        answer = api.get("/v1/audit", params={"limit": 500, **params})
        assert answer.status_code == 200, answer.text
        return list(answer.json()["events"])


def test_a_missing_or_wrong_token_is_refused_and_audited(env: Env) -> None:
    from pyspark.sql.connect.session import SparkSession

    for url, words in (
        (f"sc://localhost:{env.connect_port}/", "Credentials are required"),
        (f"sc://localhost:{env.connect_port}/;token=sgp_not_a_token", "invalid credentials"),
    ):
        started = time.time()
        refused = SparkSession.builder.remote(url).create()
        try:
            with pytest.raises(Exception) as caught:
                refused.range(1).collect()
        finally:
            # Not left as the client's active session, which later calls would use.
            with contextlib.suppress(Exception):
                refused.stop()
        assert "UNAUTHENTICATED" in str(caught.value), caught.value
        assert words.lower() in str(caught.value).lower(), caught.value
    failed = _audit(env, action="login", outcome="failed", since=started - 1)
    assert failed, "a refused Connect call is a failed login in the audit log"


def _walk_call(channel: Any, method: Any, request: Any, metadata: list[tuple[str, str]]) -> Any:
    """Call one method of the service as a client would (streams included); its status code
    (OK when it answered)."""
    import grpc

    from sparkgate.enginelink import SERVICE_NAME

    path = f"/{SERVICE_NAME}/{method.name}"
    kinds = {"request_serializer": type(request).SerializeToString}
    try:
        if method.client_streaming:
            channel.stream_unary(path, **kinds)(iter([request]), metadata=metadata, timeout=60)
        elif method.server_streaming:
            list(channel.unary_stream(path, **kinds)(request, metadata=metadata, timeout=60))
        else:
            channel.unary_unary(path, **kinds)(request, metadata=metadata, timeout=60)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def _walk_request(method: str, session_id: str) -> Any:
    """A request of ``method`` on alice's session that would change something if it were let
    through: a query, a setting, the session released."""
    from pyspark.sql.connect.proto import base_pb2

    from sparkgate.enginelink import request_class

    request: Any = request_class(method)()
    request.session_id = session_id
    request.user_context.user_id = "alice"
    if method == "ExecutePlan":
        request.plan.root.sql.query = "SELECT 'walked' AS w"
    elif method == "Config":
        pair = request.operation.set.pairs.add()
        pair.key, pair.value = "spark.sql.shuffle.partitions", "7"
    elif method == "Interrupt":
        request.interrupt_type = base_pb2.InterruptRequest.INTERRUPT_TYPE_ALL
    elif method == "AddArtifacts":
        chunk = request.batch.artifacts.add()
        chunk.name, chunk.data.data = "files/walked.txt", b"walked"
    return request


def test_every_method_without_a_token_or_with_a_wrong_one_is_unauthenticated(env: Env) -> None:
    """The method walk: every method of SparkConnectService (from pyspark's descriptor, as the
    door builds its handlers, so a new method is walked without anyone adding it here) made
    on alice's session without a token and with a wrong one answers UNAUTHENTICATED, and
    alice's session carries on untouched: no query ran, no setting changed."""
    import grpc

    from sparkgate.enginelink import SERVICE
    from sparkgate_dev.proxy import TcpProxy

    methods = list(SERVICE.methods)
    assert {"ExecutePlan", "Config", "ReleaseSession", "AddArtifacts"} <= {m.name for m in methods}
    with env.spark("alice") as spark:
        assert spark.range(3).count() == 3
        before = len(_queries(env))
        for number, method in enumerate(methods):
            request = _walk_request(method.name, spark.session_id)
            with grpc.insecure_channel(f"127.0.0.1:{env.connect_port}") as channel:
                code = _walk_call(channel, method, request, [])
            assert code is grpc.StatusCode.UNAUTHENTICATED, (method.name, code)
            # A wrong token counts against its address: each from one of its own, so that
            # 127.0.0.1 stays unslowed for the tests after this one.
            proxy = TcpProxy(("127.0.0.1", env.connect_port), source=f"127.0.0.{20 + number}")
            proxy.start()
            try:
                with grpc.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
                    wrong = [("authorization", "Bearer sgp_not_a_token")]
                    code = _walk_call(channel, method, request, wrong)
            finally:
                proxy.stop()
            assert code is grpc.StatusCode.UNAUTHENTICATED, (method.name, code)
        assert spark.conf.get("spark.sql.shuffle.partitions") != "7"
        assert spark.range(4).count() == 4  # the session was not released
    after = _queries(env)
    assert not [q for q in after if "walked" in q["query"]], after
    assert len(after) == before + 1  # alice's count above, and nothing of the walk's


def test_errors_keep_spark_error_class_and_are_recorded(env: Env) -> None:
    from pyspark.errors import AnalysisException

    with env.spark("alice") as spark:
        with pytest.raises(AnalysisException) as caught:
            spark.sql("SELECT * FROM no_such_table_anywhere").collect()
        assert caught.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    failed = [q for q in _queries(env) if "no_such_table_anywhere" in q["query"]]
    assert failed and failed[0]["state"] == "failed", failed
    assert failed[0]["error"]["code"] == "TABLE_OR_VIEW_NOT_FOUND", failed[0]["error"]


def test_each_run_is_one_query_and_its_rows_are_the_clients(env: Env) -> None:
    """spark.sql of a query is a SqlCommand that Spark only analyses, handing the query back
    for the DataFrame to run: the query is recorded when it runs, once a run, as its SQL. A
    command runs in spark.sql itself: recorded once. Neither's rows are sparkgate's to give."""
    from pyspark.errors import AnalysisException

    tag = uuid.uuid4().hex[:12]
    with env.spark("alice") as spark:
        assert spark.sql(f"SELECT '{tag}-select' AS tag, 1 + 1 AS two").collect()[0].two == 2
        assert spark.sql(f"SELECT '{tag}-never' AS tag").columns == ["tag"]  # never run
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW v_{tag} AS SELECT '{tag}' AS tag")
        twice = spark.sql(f"SELECT * FROM v_{tag}")
        assert twice.collect() == twice.collect()
        with pytest.raises(AnalysisException):
            spark.sql(f"SELECT * FROM missing_{tag}")
        refs = spark.sql(
            f"SELECT id, '{tag}-refs' AS t FROM {{df}} WHERE id > 1", df=spark.range(4)
        )
        spark.addTag("team=finance")  # Spark Connect's operation tags are the query's
        assert [r.id for r in refs.collect()] == [2, 3]
        spark.clearTags()
    queries = [q for q in _queries(env) if tag in q["query"]]

    def recorded(words: str) -> list[tuple[str, str]]:
        return [(q["kind"], q["state"]) for q in queries if words in q["query"]]

    assert recorded(f"'{tag}-select'") == [("sql", "success")], queries
    assert recorded(f"'{tag}-never'") == [], queries
    assert recorded(f"CREATE OR REPLACE TEMPORARY VIEW v_{tag}") == [("sql", "success")]
    assert recorded(f"SELECT * FROM v_{tag}") == [("sql", "success")] * 2, queries
    assert recorded(f"missing_{tag}") == [("sql", "failed")], queries
    assert recorded(f"'{tag}-refs'") == [("sql", "success")], queries
    selected = next(q for q in queries if f"'{tag}-select'" in q["query"])
    with env.api("alice") as api:
        answer = api.get(f"/v1/queries/{selected['id']}/result")
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error["code"] == "RESULT_NOT_AVAILABLE", error
    assert "Spark Connect client" in error["message"], error
    assert "Python" not in error["message"], error
    # What its Spark tasks cost, recorded by the engine once the operation ended.
    refs = next(q for q in queries if f"'{tag}-refs'" in q["query"])
    with env.api("alice") as api:
        cost = eventually(
            lambda: api.get(f"/v1/queries/{refs['id']}").json()["cost"],
            timeout=30,
            what="the Connect query's cost",
        )
    assert cost["tasks"] > 0 and cost["input_records"] == 4, cost
    with env.api("alice") as api:
        assert api.get(f"/v1/queries/{refs['id']}").json()["tags"] == {"team": "finance"}
        assert api.get(f"/v1/queries/{selected['id']}").json()["tags"] == {}


def test_a_sql_only_user_is_refused_code_streams_and_denied_settings(env: Env) -> None:
    from pyspark.sql.connect.functions import col, udf
    from pyspark.sql.types import LongType

    with env.spark("bob") as spark:
        assert spark.range(4).count() == 4
        started = time.time()
        with pytest.raises(Exception) as caught:
            same: Any = udf(lambda x: x, LongType())
            spark.range(2).select(same(col("id"))).collect()
        assert "PERMISSION_DENIED" in str(caught.value) and "'code'" in str(caught.value)
        with pytest.raises(Exception) as caught:
            spark.conf.set("spark.sql.warehouse.dir", "/tmp/elsewhere")
        assert "spark.sql.warehouse.dir" in str(caught.value), caught.value
        with pytest.raises(Exception) as caught:
            spark.sql("SET spark.sql.warehouse.dir=/tmp/elsewhere").collect()
        assert "spark.sql.warehouse.dir" in str(caught.value), caught.value
        with pytest.raises(Exception) as caught:  # SQL beside DataFrames is read as well
            spark.sql("SET spark.sql.warehouse.dir=/tmp/elsewhere -- {df}", df=spark.range(1))
        assert "PERMISSION_DENIED" in str(caught.value), caught.value
        spark.conf.set("spark.sql.shuffle.partitions", "3")  # an allowed one
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
        with pytest.raises(Exception) as caught:
            spark.readStream.format("rate").load().writeStream.format("noop").start()
        assert "SAVE STREAM" in str(caught.value), caught.value
    denied = _audit(env, user="bob", outcome="denied", since=started - 1)
    assert {e["detail"].get("right") for e in denied} >= {"code"}, denied
    assert not [q for q in _queries(env, "bob") if q["state"] == "running"]


def test_users_are_isolated_whatever_user_id_or_session_id_they_send(env: Env) -> None:
    shared_id = str(uuid.uuid4())
    with env.spark("alice", user_id="bob", session_id=shared_id) as alice:
        alice.range(3).createOrReplaceTempView("alices_view")
        assert alice.sql("SELECT count(*) AS n FROM alices_view").collect()[0].n == 3
        with env.spark("bob", session_id=shared_id) as bob:
            with pytest.raises(Exception) as caught:
                bob.sql("SELECT * FROM alices_view").collect()
            assert "TABLE_OR_VIEW_NOT_FOUND" in str(caught.value), caught.value
        assert alice.sql("SELECT count(*) AS n FROM alices_view").collect()[0].n == 3
    alices = [q for q in _queries(env, "alice") if "alices_view" in q["query"]]
    assert alices and all(q["state"] == "success" for q in alices), alices
    bobs = [q for q in _queries(env, "bob") if "alices_view" in q["query"]]
    assert bobs and all(q["state"] == "failed" for q in bobs), bobs  # his own, refused
    with env.api("alice") as api:
        sessions = api.get("/v1/sessions", params={"limit": 500}).json()["sessions"]
    assert all(s["owner"] == "alice" for s in sessions)


def test_the_engine_secret_reaches_no_user(env: Env) -> None:
    from sparkgate.store import Store

    with env.spark("alice") as spark:
        with pytest.raises(Exception) as caught:
            spark.conf.get("spark.connect.authenticate.token")
        assert "SQL_CONF_NOT_FOUND" in str(caught.value), caught.value
        everything = "\n".join(f"{k}={v}" for k, v in spark.conf.getAll.items())
    store = Store.open(env.server.settings.resolved_store_url)
    try:
        engines = store.engines.list_all()
        endpoints = {e.id: store.connect.endpoint(e.id) for e in engines}
    finally:
        store.close()
    assert any(endpoints.values())
    with env.api("carol") as api:
        views = api.get("/v1/engines", params={"all": True}).text
    for engine in engines:
        endpoint = endpoints[engine.id]
        if endpoint is None:
            continue
        secret = endpoint.secret
        assert secret not in everything and secret not in views
        assert secret not in repr(endpoint)
        if engine.log_path:
            assert secret not in Path(engine.log_path).read_text(errors="replace")
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                assert secret.encode() not in cmdline.read_bytes()


def _endless(spark: Any, errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            spark.range(0, 10**13, 1, 2).selectExpr("sum(id % 7) AS s").collect()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _running(env: Env) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        running = [
            q for q in _queries(env, state="running") if "range(0, 10000000000000)" in q["query"]
        ]
        return running[0] if running else None

    found: dict[str, Any] = eventually(find, timeout=120, what="the operation running")
    return found


def _final(env: Env, query_id: int, timeout: float = 60) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        with env.api("alice") as api:
            query: dict[str, Any] = api.get(f"/v1/queries/{query_id}").json()
        return query if query["state"] in {"success", "failed", "cancelled"} else None

    found: dict[str, Any] = eventually(ended, timeout=timeout, what=f"query {query_id} ended")
    return found


def test_operations_are_cancelled_from_v1_and_from_the_client(env: Env) -> None:
    with env.spark("alice") as spark:
        errors: list[BaseException] = []
        thread = _endless(spark, errors)
        query = _running(env)
        with env.api("alice") as api:
            answer = api.post(f"/v1/queries/{query['id']}/cancel")
            assert answer.status_code == 202, answer.text
        thread.join(120)
        assert not thread.is_alive() and errors, "the client's call ended with an error"
        assert "OPERATION_CANCELED" in str(errors[0]) or "cancel" in str(errors[0]).lower()
        assert _final(env, query["id"])["state"] == "cancelled"
        # Cancelled while it was still planning: no Spark job of it holds the cores.
        assert spark.range(2).count() == 2

        errors.clear()
        thread = _endless(spark, errors)
        query = _running(env)
        spark.interruptAll()
        thread.join(120)
        assert not thread.is_alive() and errors
        assert _final(env, query["id"])["state"] == "cancelled"
        assert spark.range(2).count() == 2  # the session goes on


def test_a_million_rows_reach_pandas(env: Env) -> None:
    with env.spark("alice") as spark:
        frame = spark.range(1_000_000).selectExpr("id", "id * 2 AS twice").toPandas()
    assert len(frame) == 1_000_000
    assert int(frame["twice"].sum()) == 2 * sum(range(1_000_000))


def test_a_query_does_not_stay_running_when_its_client_vanishes(env: Env) -> None:
    # A client process dies under its operation and never reattaches: Spark drops the
    # operation after its detach timeout, and the engine ends the query.
    script = (
        "from pyspark.sql.connect.session import SparkSession\n"
        f"spark = SparkSession.builder.remote({env.url('alice')!r}).create()\n"
        "spark.range(0, 10**13, 1, 2).selectExpr('sum(id % 7) AS s').collect()\n"
    )
    client = subprocess.Popen([sys.executable, "-c", script])
    try:
        query = _running(env)
    finally:
        client.kill()
        client.wait()
    final = _final(env, query["id"], timeout=180)
    assert final["state"] == "failed", final
    assert final["error"]["code"] == "CONNECT_OPERATION_GONE", final["error"]


def _package(directory: Path, value: str) -> str:
    """A zipped package ``sgpkg`` whose ``VALUE`` is ``value``, named as PySpark's tests name
    theirs (every session uploads a file of this one name)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "my_zipfile.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("sgpkg/__init__.py", f"VALUE = {value!r}\n")
    return str(path)


def _values(spark: Any) -> dict[str, str]:
    """What a Python UDF, a Python data source and a Python UDTF of ``spark`` read of the
    session's ``sgpkg`` (each runs in Python workers of the engine).

    Spark's own Connect server gives a UDTF the module another session imported first when
    both name it alike (its UDTF workers are not kept per session): so is sparkgate's, and
    only the UDF and the data source are held to their session's own."""
    from pyspark.sql.connect.functions import udf, udtf
    from pyspark.sql.datasource import DataSource, DataSourceReader
    from pyspark.sql.types import StringType, StructField, StructType

    # No type hints: PySpark would take the function for a pandas UDF.
    def value(_):  # type: ignore[no-untyped-def]
        import sgpkg  # type: ignore[import-not-found]

        return str(sgpkg.VALUE)

    class Values:
        def eval(self) -> Iterator[tuple[str]]:
            import sgpkg

            yield (str(sgpkg.VALUE),)

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "sgpkg_values"

        def schema(self) -> str:
            return "value string"

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader()

    class Reader(DataSourceReader):
        def read(self, partition: Any) -> Iterator[tuple[str]]:
            import sgpkg

            yield (str(sgpkg.VALUE),)

    python_udf: Any = udf(value, StringType())
    python_udtf: Any = udtf(Values, returnType=StructType([StructField("value", StringType())]))
    spark.dataSource.register(Source)
    return {
        "udf": spark.range(1).select(python_udf("id").alias("v")).first().v,
        "source": spark.read.format("sgpkg_values").load().first().value,
        "udtf": python_udtf().first().value,
    }


def _own(values: dict[str, str], name: str, others: set[str]) -> None:
    assert values["udf"] == values["source"] == name, values
    assert values["udtf"] in others | {name}, values


def _artifacts_of(spark: Any) -> list[Path]:
    """The engine's directories holding the files of ``spark``'s session (Spark keeps a
    session's artifacts under a directory named for its server-side session id)."""
    session = spark.client._server_session_id
    assert session, "the client has not heard its server-side session id yet"
    return [path for path in Path(tempfile.gettempdir()).glob(f"artifacts*/{session}")]


def test_each_session_uses_its_own_files_of_the_same_name(env: Env, tmp_path: Path) -> None:
    """Two sessions of alice's and one of carol's, in one engine, each upload a package of
    the same name with other contents: each one's UDFs, UDTFs and data sources see their own."""
    with (
        env.spark("alice") as first,
        env.spark("alice") as second,
        env.spark("carol") as other,
    ):
        sessions = {"first": first, "second": second, "carol's": other}
        for name, spark in sessions.items():
            spark.addArtifacts(_package(tmp_path / name, name), pyfile=True)
        for name, spark in sessions.items():
            _own(_values(spark), name, set(sessions))
        # A second upload of other contents under the same name is refused, and changes
        # nothing (as on Spark's own server); the same contents again are taken.
        with pytest.raises(Exception) as caught:
            first.addArtifacts(_package(tmp_path / "again", "again"), pyfile=True)
        assert "ARTIFACT_ALREADY_EXISTS" in str(caught.value), caught.value
        first.addArtifacts(str(tmp_path / "first" / "my_zipfile.zip"), pyfile=True)
        assert _values(first)["udf"] == "first"
        # A session that added nothing runs its Python as before.
        with env.spark("alice") as plain:
            from pyspark.sql.connect.functions import udf
            from pyspark.sql.types import LongType

            tenfold: Any = udf(lambda x: x * 10, LongType())
            assert [r.t for r in plain.range(3).select(tenfold("id").alias("t")).collect()] == [
                0,
                10,
                20,
            ]


def test_files_and_archives_are_in_the_python_workers_directory(env: Env, tmp_path: Path) -> None:
    from pyspark.sql.connect.functions import udf
    from pyspark.sql.types import StringType

    (tmp_path / "my_file.txt").write_text("from a file")
    archive = tmp_path / "my_files.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("my_archive/my_file.txt", "from an archive")

    def read(_):  # type: ignore[no-untyped-def]  # hints would make it a pandas UDF
        with open("./my_file.txt") as file, open("./my_files/my_archive/my_file.txt") as packed:
            return f"{file.read()}|{packed.read()}"

    with env.spark("alice") as spark:
        spark.addArtifacts(str(tmp_path / "my_file.txt"), file=True)
        spark.addArtifacts(f"{archive}#my_files", archive=True)
        reader: Any = udf(read, StringType())
        got = spark.range(1).select(reader("id").alias("v")).first().v
    assert got == "from a file|from an archive"


def test_a_sessions_files_go_with_it(env: Env, tmp_path: Path) -> None:
    """Released by its client or ended by sparkgate, a session's files are gone from the
    engine; later sessions upload the same name and run."""
    from sparkgate.store import Store

    with env.spark("alice") as released:
        released.addArtifacts(_package(tmp_path / "released", "released"), pyfile=True)
        assert _values(released)["udf"] == "released"
        kept = _artifacts_of(released)
        assert kept, "the session's files are in the engine"
    eventually(lambda: not any(p.exists() for p in kept), timeout=30, what="its files gone")

    with env.spark("alice") as killed:
        killed.addArtifacts(_package(tmp_path / "killed", "killed"), pyfile=True)
        assert _values(killed)["udf"] == "killed"
        kept = _artifacts_of(killed)
        store = Store.open(env.server.settings.resolved_store_url)
        try:
            session_id = store.connect.session_of("alice", killed.session_id)
        finally:
            store.close()
        with env.api("alice") as api:
            assert api.delete(f"/v1/sessions/{session_id}").status_code == 200
        eventually(lambda: not any(p.exists() for p in kept), timeout=30, what="its files gone")

    with env.spark("alice") as later:
        later.addArtifacts(_package(tmp_path / "later", "later"), pyfile=True)
        _own(_values(later), "later", {"released", "killed", "first", "second", "carol's"})


def test_classic_sessions_beside_connect_ones_keep_their_own_files(
    env: Env, tmp_path: Path
) -> None:
    """Livy's classic PySpark sessions in the engine where Connect sessions uploaded files of
    one name: their Python runs, and what their code adds (sc.addPyFile) is theirs."""
    with env.spark("alice") as first, env.spark("carol") as second:
        first.addArtifacts(_package(tmp_path / "first", "first"), pyfile=True)
        second.addArtifacts(_package(tmp_path / "second", "second"), pyfile=True)
        with env.api("alice") as api:
            answer = api.post("/sessions", json={"kind": "pyspark"})
            assert answer.status_code == 201, answer.text
            livy = answer.json()["id"]
            try:
                eventually(
                    lambda: api.get(f"/sessions/{livy}").json()["state"] == "idle",
                    timeout=240,
                    what="the Livy session idle",
                )
                plain = "spark.range(3).select(udf(lambda x: x * 3, 'long')('id')).collect()"
                assert "=6)" in livy_output(
                    api, livy, f"from pyspark.sql.functions import udf\n{plain}"
                )
                package = _package(tmp_path / "livy", "livy")
                code = (
                    f"sc.addPyFile({package!r})\n"
                    "import sgpkg\n"
                    "def value(_):\n"
                    "    import sgpkg\n"
                    "    return sgpkg.VALUE\n"
                    "print(sgpkg.VALUE)\n"
                    "print(spark.range(1).select(udf(value, 'string')('id')).first()[0])\n"
                    "print(sc.parallelize([0]).map(value).collect()[0])"
                )
                assert livy_output(api, livy, code).split() == ["livy", "livy", "livy"]
            finally:
                api.delete(f"/sessions/{livy}")
        assert _values(first)["udf"] == "first"
        assert _values(second)["udf"] == "second"


def test_an_idle_client_pinging_as_pysparks_does_is_not_sent_away(
    pinging: PingingClient,
) -> None:
    """Idle through four pings or more (the module's tests took that long; alone, this test
    waits for them): gRPC's defaults would have sent it GOAWAY "too_many_pings" at the
    third, and the connection would have dropped to IDLE; Spark's own server keeps it."""
    idled = 4.5 * PingingClient.PING_MS / 1000
    time.sleep(max(0.0, pinging.opened + idled - time.monotonic()))
    assert pinging.states[-1] == "READY", pinging.states
    assert "IDLE" not in pinging.states[pinging.states.index("READY") :], pinging.states


def test_a_dead_engine_ends_its_sessions_with_engine_lost(env: Env) -> None:
    from sparkgate.store import Store

    with env.spark("alice") as spark:
        assert spark.range(1).count() == 1
        store = Store.open(env.server.settings.resolved_store_url)
        try:
            session_id = store.connect.session_of("alice", spark.session_id)
            assert session_id is not None
            engine = store.engines.get(store.sessions.get(session_id).engine_id or 0)
        finally:
            store.close()
        assert engine.pid is not None
        os.killpg(engine.pid, signal.SIGKILL)
        with pytest.raises(Exception) as caught:
            spark.range(1).count()
        assert "ENGINE_LOST" in str(caught.value), caught.value
