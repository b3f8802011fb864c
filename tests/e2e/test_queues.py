"""Resource groups end to end: a real server whose access file holds Trino's resource-group
configuration, real engines, queries that take seconds.

The ``analysts`` group runs 2 queries at once. bob submits 8 and alice 1: hers is queued with
turn 1 and starts as soon as one of bob's ends, ahead of his other 6; never more than 2 run.
Queued state and turn show in the API, the CLI, Livy (``waiting``) and HiveServer2 (pending);
a Spark Connect operation waits its turn with its call held; a queued query cancelled ends at
once; a full queue answers 429 naming the group; a node
killed while queries are queued: the next node serves them and each runs once.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from pyhive import hive
from TCLIService.ttypes import TOperationState

from sparkgate_dev import (
    ServerProcess,
    eventually,
    free_port,
    kill_engines,
    local_test_settings,
    user_files,
)
from tests.e2e.conftest import livy_output

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

PASSWORDS = {
    "alice": "alice-pw",
    "bob": "bob-pw",
    "carol": "carol-pw",
    "erin": "erin-pw",
    "frank": "frank-pw",
    "gina": "gina-pw",
    "ivan": "ivan-pw",
}
ACCESS = """
groups: {analysts: [alice, bob, carol]}
resource_groups:
  rootGroups:
    - name: analysts
      hardConcurrencyLimit: 2
      maxQueued: 9
      schedulingPolicy: fair
      schedulingWeight: 3          # its Spark FAIR pool's weight in a shared engine
    - {name: others, hardConcurrencyLimit: 4, maxQueued: 4}
    - {name: fast, hardConcurrencyLimit: 4, maxQueued: 4}
    - {name: slow, hardConcurrencyLimit: 1, maxQueued: 4}
  selectors:
    - {clientTags: [priority=high], group: fast}
    - {userGroup: analysts, group: analysts}
    - {user: erin, group: others}
    - {user: frank, queryType: one-off, group: others}
    - {user: gina, group: others}
    - {user: ivan, group: others}
quotas:  # a microsecond of executor CPU: spent by the first query that runs a task
  - {user: ivan, per: day, executorCpuSeconds: 0.000001}
  - {user: gina, per: month, executorCpuSeconds: 0.000001, onQuota: demote, demoteTo: slow}
"""
SLEEP_MS = 4000
# A query that holds its turn for SLEEP_MS, then answers 1.
SLOW = f"SELECT length(reflect('java.lang.Thread', 'sleep', CAST({SLEEP_MS} AS BIGINT))) AS x"
FINAL = {"success", "failed", "cancelled"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("queues-home")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        thrift_port=free_port(),
        connect_port=free_port(),
        # One engine for everyone: a turn given is a query started at once (with an engine
        # per user, alice's turn would wait for her engine's JVM to start).
        engine_share_level="server",
        **user_files(home, PASSWORDS, ACCESS),
    )
    server = ServerProcess(settings).start()
    server.wait_engines_running()
    try:
        yield server
    finally:
        server.stop()
        kill_engines(settings)


def _client(server: ServerProcess, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, auth=(user, PASSWORDS[user]), timeout=60)


def _submit(api: httpx.Client, query: str = SLOW, **extra: Any) -> dict[str, Any]:
    answer = api.post("/v1/queries", json={"query": query, **extra})
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def _get(api: httpx.Client, query_id: int, wait: int = 0) -> dict[str, Any]:
    answer = api.get(f"/v1/queries/{query_id}", params={"wait": wait})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _final(api: httpx.Client, query_id: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        query = _get(api, query_id, wait=10)
        return query if query["state"] in FINAL else None

    return eventually(done, timeout=300, what=f"query {query_id} final")


def _cli(server: ServerProcess, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**server.env, "SPARKGATE_USER": user, "SPARKGATE_PASSWORD": PASSWORDS[user]}
    return subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", *args, "--server", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _most_at_once(queries: list[dict[str, Any]]) -> int:
    """The most queries running at one moment, from their recorded start and end."""
    events = sorted(
        [(_ts(q["started_at"]), 1) for q in queries]
        + [(_ts(q["finished_at"]), -1) for q in queries],
        key=lambda e: (e[0], e[1]),  # an end before a start at the same instant
    )
    most = running = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def _livy_session(api: httpx.Client, conf: dict[str, str] | None = None) -> int:
    opened = api.post("/sessions", json={"kind": "sql", "conf": conf or {}})
    assert opened.status_code == 201, opened.text
    session_id = int(opened.json()["id"])
    eventually(
        lambda: api.get(f"/sessions/{session_id}").json()["state"] == "idle",
        timeout=240,
        what=f"Livy session {session_id} idle",
    )
    return session_id


def _livy_output(api: httpx.Client, statement_url: str) -> dict[str, Any]:
    def available() -> dict[str, Any] | None:
        found: dict[str, Any] = api.get(statement_url).json()
        return found if found["state"] == "available" else None

    return eventually(available, timeout=300, what=f"Livy statement {statement_url}")


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def test_a_light_user_goes_ahead_of_a_heavy_users_queue_at_every_door(
    server: ServerProcess,
) -> None:
    with (
        _client(server, "bob") as bob,
        _client(server, "alice") as alice,
        _client(server, "carol") as carol,
        contextlib.ExitStack() as closing,
    ):
        # carol's Livy session and HiveServer2 connection, open before the group fills
        livy_id = _livy_session(carol)
        hive2 = hive.connect(
            "127.0.0.1",
            port=server.settings.thrift_port,
            username="carol",
            password=PASSWORDS["carol"],
            auth="CUSTOM",
        )
        # Closed however the test ends: a socket left to the garbage collector fails whichever
        # later test it is collected in (ResourceWarning is an error here).
        closing.callback(hive2.close)

        bobs = [_submit(bob) for _ in range(8)]
        assert [q["state"] for q in bobs[2:]] == ["queued"] * 6
        mine = _submit(alice)
        assert mine["state"] == "queued"
        queued = _get(alice, mine["id"])
        assert (queued["resource_group"], queued["queue_position"]) == ("analysts", 1)
        assert _get(bob, bobs[2]["id"])["queue_position"] == 2
        assert _get(bob, bobs[7]["id"])["queue_position"] == 7

        shown = _cli(server, "alice", "queries", "show", str(mine["id"]))
        assert shown.returncode == 0, shown.stderr
        assert "analysts (queued: turn 1)" in shown.stdout, shown.stdout

        # Livy: a queued statement is waiting; HiveServer2: pending
        statement = carol.post(f"/sessions/{livy_id}/statements", json={"code": SLOW})
        assert statement.status_code == 201, statement.text
        livy_statement = statement.json()
        assert livy_statement["state"] == "waiting"
        cursor = hive2.cursor()
        cursor.execute(SLOW, async_=True)
        state = cursor.poll().operationState
        assert state == TOperationState.PENDING_STATE

        # The queue holds 9: a tenth is refused, naming the group; a cancelled one is gone
        refused = carol.post("/v1/queries", json={"query": SLOW})
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "LIMIT_EXCEEDED"
        assert "Resource group analysts has 9 queries queued" in refused.json()["error"]["message"]
        cancelled = bob.post(f"/v1/queries/{bobs[7]['id']}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        assert cancelled.json()["state"] == "cancelled"
        gone = _get(bob, bobs[7]["id"])
        assert gone["state"] == "cancelled" and gone["started_at"] is None
        assert gone["queue_position"] is None

        ended = [_final(bob, q["id"]) for q in bobs[:7]]
        hers = _final(alice, mine["id"])
        assert hers["state"] == "success"
        assert all(q["state"] == "success" for q in ended), ended
        # Hers was admitted by the first end of bob's first two, ahead of his queued six. Only
        # the second end admits one of his, and that one may start a moment before hers (two
        # engines start them): so none of his starts before hers but one admitted at that end.
        first_end, second_end = sorted(_ts(q["finished_at"]) for q in ended[:2])
        started = _ts(hers["started_at"])
        assert started >= first_end - 0.001
        starts = [(q["id"], q["started_at"], q["finished_at"]) for q in ended]
        ahead = [q for q in ended[2:] if _ts(q["started_at"]) < started]
        assert len(ahead) <= 1, (hers["started_at"], starts)
        assert all(_ts(q["started_at"]) >= second_end - 0.001 for q in ahead), (
            hers["started_at"],
            starts,
        )
        livy_done = _livy_output(carol, f"/sessions/{livy_id}/statements/{livy_statement['id']}")
        assert livy_done["output"]["status"] == "ok"
        assert cursor.fetchall() == [(4,)]
        carol.delete(f"/sessions/{livy_id}")

        assert _most_at_once([*ended, hers]) <= 2


def test_a_user_no_selector_takes_is_refused_and_other_groups_are_apart(
    server: ServerProcess,
) -> None:
    with _client(server, "frank") as frank:
        # frank's one-off queries go to "others", which the analysts' queue does not touch
        done = _final(frank, _submit(frank, "SELECT 1 AS one")["id"])
        assert done["state"] == "success" and done["resource_group"] == "others"
        # an interactive session of his matches no selector: refused, as Trino does
        session = frank.post("/v1/sessions", json={"kind": "interactive"})
        assert session.status_code == 201, session.text
        refused = frank.post(
            "/v1/queries", json={"query": "SELECT 1", "session_id": session.json()["id"]}
        )
        assert refused.status_code == 403, refused.text
        assert "No resource group takes this query" in refused.json()["error"]["message"]
        frank.delete(f"/v1/sessions/{session.json()['id']}")


def test_tags_follow_queries_from_every_door_and_usage_sums_by_them(
    server: ServerProcess,
) -> None:
    """Tags from a one-off query, a session (and its query's own, which win), a JDBC client's
    sparkgate.tags and Livy's conf; a clientTags selector places by them; usage by tag, by
    resource group and by group equals the sum of the queries' own costs."""
    since = time.time()
    scan = "SELECT count(*) AS n FROM range(1000)"
    with _client(server, "erin") as erin:
        one_off = _final(
            erin, _submit(erin, scan, tags={"team": "finance", "priority": "high"})["id"]
        )
        assert one_off["tags"] == {"team": "finance", "priority": "high"}
        assert one_off["resource_group"] == "fast"  # its tag chose the group
        session = erin.post(
            "/v1/sessions", json={"kind": "interactive", "tags": {"team": "growth"}}
        )
        assert session.status_code == 201, session.text
        session_id = session.json()["id"]
        mine = _final(
            erin, _submit(erin, scan, session_id=session_id, tags={"project": "churn"})["id"]
        )
        assert mine["tags"] == {"team": "growth", "project": "churn"}
        assert mine["resource_group"] == "others"
        overridden = _submit(erin, scan, session_id=session_id, tags={"team": "finance"})
        assert _final(erin, overridden["id"])["tags"] == {"team": "finance"}
        erin.delete(f"/v1/sessions/{session_id}")
        bad = erin.post("/v1/queries", json={"query": scan, "tags": {"no spaces": "x"}})
        assert bad.status_code == 422, bad.text
        assert "tag 'no spaces'" in bad.json()["error"]["message"]

        with hive.connect(
            "127.0.0.1",
            port=server.settings.thrift_port,
            username="erin",
            password=PASSWORDS["erin"],
            auth="CUSTOM",
            configuration={"sparkgate.tags": "team=finance,project=churn"},
        ) as hive2:
            cursor = hive2.cursor()
            cursor.execute(scan)
            assert cursor.fetchall() == [(1000,)]
        livy_id = _livy_session(erin, conf={"sparkgate.tags": "team=growth"})
        statement = erin.post(f"/sessions/{livy_id}/statements", json={"code": scan})
        assert statement.status_code == 201, statement.text
        _livy_output(erin, f"/sessions/{livy_id}/statements/{statement.json()['id']}")
        erin.delete(f"/sessions/{livy_id}")

        ours = [
            _get(erin, q["id"])
            for q in erin.get("/v1/queries", params={"limit": 50}).json()["queries"]
            if q["query"] == scan and q["state"] == "success"
        ]
        assert len(ours) == 5, ours
        hive2_query = next(q for q in ours if q["tags"] == {"team": "finance", "project": "churn"})
        livy_query = next(q for q in ours if q["tags"] == {"team": "growth"})
        assert hive2_query["resource_group"] == livy_query["resource_group"] == "others"

        def summed(key: str) -> dict[str | None, tuple[int, int]]:
            rows = erin.get("/v1/usage", params={"group_by": key, "since": since}).json()["rows"]
            return {r["key"]: (r["queries"], r["cost"]["tasks"]) for r in rows}

        def expected(
            value_of: Callable[[dict[str, Any]], str | None],
        ) -> dict[str | None, tuple[int, int]]:
            sums: dict[str | None, tuple[int, int]] = {}
            for query in ours:
                key = value_of(query)
                queries, tasks = sums.get(key, (0, 0))
                sums[key] = (queries + 1, tasks + query["cost"]["tasks"])
            return sums

        assert all(q["cost"] and q["cost"]["tasks"] > 0 for q in ours), ours
        assert summed("tag:team") == expected(lambda q: q["tags"].get("team"))
        assert summed("tag:project") == expected(lambda q: q["tags"].get("project"))
        assert summed("resource_group") == expected(lambda q: q["resource_group"])
        assert summed("group") == {None: (5, sum(q["cost"]["tasks"] for q in ours))}
        assert erin.get("/v1/usage", params={"group_by": "tag:"}).status_code == 422


class _ConnectCalls:
    """alice's pyspark Connect session, whose count() calls run in threads of their own (a
    queued one holds its call), with what each call gave: a count, or the client's error."""

    def __init__(self, spark: Any, api: httpx.Client) -> None:
        self.spark = spark
        self.api = api
        self.outcomes: list[Any] = []

    def count(self, n: int, tag: str | None = None) -> threading.Thread:
        from pyspark.errors.exceptions.connect import SparkConnectGrpcException

        def run() -> None:
            if tag is not None:
                self.spark.addTag(tag)  # a thread's own, in Spark Connect's client
            try:
                self.outcomes.append(self.spark.range(n).count())
            except SparkConnectGrpcException as exc:
                self.outcomes.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def queued(self) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            listed = self.api.get("/v1/queries", params={"state": "queued"}).json()["queries"]
            return dict(listed[0]) if listed else None

        return eventually(found, timeout=60, what="alice's operation queued")

    def ended_unrun(self, call: threading.Thread, query_id: int) -> None:
        """The call failed at once with the client's error; the query never ran."""
        from pyspark.errors.exceptions.connect import SparkConnectGrpcException

        call.join(timeout=60)
        assert not call.is_alive()
        assert isinstance(self.outcomes[-1], SparkConnectGrpcException), self.outcomes
        assert "cancelled" in str(self.outcomes[-1]), self.outcomes
        gone = _get(self.api, query_id)
        assert (gone["state"], gone["started_at"]) == ("cancelled", None)


def test_a_connect_operation_waits_its_turn_with_its_call_held(server: ServerProcess) -> None:
    """alice's Spark Connect operation, with bob's two queries holding the analysts' turns, is
    a queued query (turn 1) while pyspark's client waits on its call; it runs when one of
    bob's ends. Others, cancelled through the API or by the client's interruptTag and
    interruptAll while queued, fail the client's call at once and never run."""
    from pyspark.sql.connect.session import SparkSession

    with _client(server, "bob") as bob, _client(server, "alice") as alice:
        token = alice.post("/v1/tokens", json={"name": "connect"}).json()["token"]
        url = f"sc://localhost:{server.settings.connect_port}/;token={token}"
        spark = SparkSession.builder.remote(url).create()
        try:
            assert spark.range(3).count() == 3  # her session's engine is up before the test
            calls = _ConnectCalls(spark, alice)
            bobs = [_submit(bob) for _ in range(2)]
            waiting = calls.count(5)
            queued = calls.queued()
            shown = _get(alice, queued["id"])
            assert (shown["resource_group"], shown["queue_position"]) == ("analysts", 1)
            waiting.join(timeout=120)
            assert calls.outcomes == [5]
            # Final as the client has its answer: the door records the end before it hands on
            # the answer that tells the client the operation is complete.
            done = _get(alice, queued["id"])
            assert done["state"] == "success"
            first_end = min(_ts(_final(bob, q["id"])["finished_at"]) for q in bobs)
            assert _ts(done["started_at"]) >= first_end - 0.001

            bobs = [_submit(bob) for _ in range(2)]
            call = calls.count(7)
            queued = calls.queued()
            answer = alice.post(f"/v1/queries/{queued['id']}/cancel")
            assert answer.status_code == 202, answer.text
            calls.ended_unrun(call, queued["id"])

            # The client's own interrupts reach a queued operation: by its tag, then all.
            for by_tag in (True, False):
                call = calls.count(9, tag="nightly")
                queued = calls.queued()
                interrupted = spark.interruptTag("nightly") if by_tag else spark.interruptAll()
                assert len(interrupted) == 1
                calls.ended_unrun(call, queued["id"])
            for query in bobs:
                _final(bob, query["id"])
        finally:
            spark.stop()


def test_queued_queries_outlive_their_node(server: ServerProcess) -> None:
    """Queued queries are rows in the store: with the node that admitted them killed, the
    engine's ends admit the rest, and a new node serves their answers; each ran once."""
    with _client(server, "bob") as bob:
        queries = [_submit(bob) for _ in range(5)]
        assert [q["state"] for q in queries[2:]] == ["queued"] * 3
    server.stop(signal.SIGKILL)
    try:
        time.sleep(SLEEP_MS / 1000)  # an end comes while no node runs
    finally:
        server.start()
    with _client(server, "bob") as bob:
        ended = [_final(bob, q["id"]) for q in queries]
        assert [q["state"] for q in ended] == ["success"] * 5, ended
        # once: each ran a single time, from one start to one end, two at a time at most
        assert _most_at_once(ended) <= 2
        for query in ended:
            result = bob.get(f"/v1/queries/{query['id']}/result").json()
            assert result["rows"] == [[4]], result


def test_a_spent_quota_refuses_or_demotes_new_work(server: ServerProcess) -> None:
    scan = "SELECT count(*) AS n FROM range(100)"
    with _client(server, "ivan") as ivan, _client(server, "gina") as gina:
        first = _final(ivan, _submit(ivan, scan)["id"])
        assert first["state"] == "success" and first["cost"]["executor_cpu_time_ns"] > 0
        refused = ivan.post("/v1/queries", json={"query": scan})
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["code"] == "LIMIT_EXCEEDED", error
        assert "user ivan's 1e-06 s of executor CPU per day is spent" in error["message"]
        now = time.time()
        assert error["resets_at"] == now - now % 86400 + 86400, error  # the next UTC day

        before = _final(gina, _submit(gina, scan)["id"])
        assert before["resource_group"] == "others"
        after = _final(gina, _submit(gina, scan)["id"])
        assert after["state"] == "success" and after["resource_group"] == "slow"


def test_a_groups_weight_is_its_spark_pools_weight(server: ServerProcess) -> None:
    """In the shared engine, a group's statements run in a FAIR pool of the group's weight
    (analysts: 3), the one of erin's statement in its own group's (others: 1); Spark's own
    scheduler says so, read from a PySpark session in the same driver."""
    with _client(server, "erin") as erin:
        opened = erin.post("/sessions", json={"kind": "pyspark"})
        assert opened.status_code == 201, opened.text
        session_id = opened.json()["id"]
        eventually(
            lambda: erin.get(f"/sessions/{session_id}").json()["state"] == "idle",
            timeout=240,
            what="erin's PySpark session idle",
        )
        code = (
            "sc = spark.sparkContext\n"
            "print(sc.getLocalProperty('spark.scheduler.pool'))\n"
            "for name in ('group:analysts', 'group:others'):\n"
            "    pool = sc._jsc.sc().getPoolForName(name)\n"
            "    print(name, pool.get().weight() if pool.isDefined() else None)"
        )
        printed = livy_output(erin, session_id, code).split("\n")
        erin.delete(f"/sessions/{session_id}")
    assert printed[:3] == ["group:others", "group:analysts 3", "group:others 1"], printed
