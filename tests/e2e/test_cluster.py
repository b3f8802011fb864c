"""The multi-machine shape on one machine: two nodes on a fresh PostgreSQL database, engines
as applications on a Spark standalone cluster, one shared home; then the chaos suite's short
form (dev/sparkgate_dev/chaos.py; the full form is bench/chaos.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from livy.models import SessionKind
from livy.session import LivySession

from sparkgate.schemas.streams import StreamJobDetail
from sparkgate_dev import cluster, eventually
from sparkgate_dev.chaos import SHORT, Chaos, Failover, Rig, describe, wait_final

pytestmark = [pytest.mark.postgres, pytest.mark.spark]


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, pg_available: None) -> Iterator[Rig]:
    started = Rig(tmp_path_factory.mktemp("cluster-rig"), SHORT).start()
    try:
        yield started
    finally:
        stray = started.close()
        assert not stray, f"processes left after the rig stopped: {stray}"
        assert cluster.status(started.root / "cluster") is None


def rows(failover: Failover, sql: str, session_id: int) -> list[list[Any]]:
    query = failover.call(lambda c: c.submit(sql, session_id=session_id))
    final = wait_final(failover, int(query.id))
    assert final.state == "success", final
    return failover.call(lambda c: list(c.rows(int(query.id))))


def test_queries_ctas_stream_and_livy_on_the_cluster_through_two_nodes(rig: Rig) -> None:
    a, b = rig.nodes_live()
    assert rig.info is not None
    with a.client() as on_a, b.client() as on_b:
        session = on_a.create_session()
        ready = on_b.wait_session(session.id, {"idle", "error", "dead"}, timeout=300)
        assert ready.state == "idle", ready
        sid = session.id

        query = on_b.submit(
            "SELECT id % 3 AS k, count(*) AS n FROM range(3000) GROUP BY 1 ORDER BY 1",
            session_id=sid,
        )
        assert on_a.wait(query.id, timeout=120).state == "success"
        assert list(on_a.rows(query.id)) == [[0, 1000], [1, 1000], [2, 1000]]

        # The engine is an application at the master, with the resources the defaults give.
        engine_id = on_a.session(sid).engine_id
        [app] = [
            app
            for app in cluster.applications(rig.info.master_ui)
            if app["name"] == f"sparkgate-engine-{engine_id}"
        ]
        assert app["state"] == "RUNNING" and 1 <= app["cores"] <= 1

        ctas = on_a.submit(
            "CREATE TABLE cluster_squares AS SELECT id, id * id AS sq FROM range(50)",
            session_id=sid,
        )
        assert on_b.wait(ctas.id, timeout=120).state == "success"

    with rig.failover() as failover:
        assert rows(failover, "SELECT count(*), sum(sq) FROM cluster_squares", sid) == [
            [50, sum(i * i for i in range(50))]
        ]

        # A stream job on the cluster, created through one node and watched through the other.
        out = rig.home / "cluster-stream-out"
        failover.call(
            lambda c: c.create_stream(
                "cluster-numbers",
                "CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='10');\n"
                f"SAVE STREAM numbers TO parquet TRIGGER 300ms OPTIONS ('path'='{out}')",
            )
        )

        def batches() -> StreamJobDetail | None:
            job = failover.call(lambda c: c.stream("cluster-numbers"))
            last = (job.queries[0].last_progress or {}) if job.queries else {}
            return job if last.get("batch_id", -1) >= 2 else None

        running = eventually(batches, timeout=300, what="the stream's third batch")
        stream_engine = running.queries[0].engine_id
        assert any(
            app["name"] == f"sparkgate-engine-{stream_engine}"
            for app in cluster.applications(rig.info.master_ui)
        )
        failover.call(lambda c: c.stop_stream("cluster-numbers"))
        failover.call(lambda c: c.wait_stream("cluster-numbers", {"stopped"}, timeout=120))
        [[count, distinct, low, high]] = rows(
            failover,
            f"SELECT count(*), count(DISTINCT value), min(value), max(value) FROM parquet.`{out}`",
            sid,
        )
        assert count == distinct and low == 0 and high == count - 1 and count > 0

    # A Livy pyspark statement, through the real livy client, on node B.
    with LivySession.create(b.url, kind=SessionKind.PYSPARK, echo=False) as livy:
        assert livy.run("spark.range(10).selectExpr('sum(id)').first()[0]").text == "45"
        assert livy.run("spark.table('cluster_squares').count()").text == "50"


@pytest.mark.timeout(1500)
def test_the_chaos_suite_short_form_keeps_every_invariant(rig: Rig) -> None:
    reports = Chaos(rig).run()
    table = "\n".join(str(describe(r)) for r in reports)
    assert len(reports) == 5 and reports[0].name == "kill -9 a server node", table
    for report in reports:
        assert report.passed, (report.name, report.invariants, report.notes, table)
        assert report.recover is not None
