"""A Spark Connect client whose node dies goes on through another node: which engine holds
its session is in the store, so the other node forwards to the same engine, where its
temporary views and settings still are. A TCP proxy stands for the load balancer in front."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from sparkgate_dev import MakeServer, eventually, free_port
from sparkgate_dev.proxy import TcpProxy

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(900)]


def test_a_client_goes_on_through_another_node(
    pg_url: str, make_server: MakeServer, tmp_path: Any
) -> None:
    # pg_url first: its schema is dropped after make_server has stopped the nodes and their
    # engines (teardown runs in reverse).
    from pyspark.sql.connect.session import SparkSession

    home = tmp_path / "shared-home"
    common = {
        "store_url": pg_url,
        "metastore_uri": None,
        "metastore_port": free_port(),
        "warm_engines": 0,
        "lease_ttl": 3.0,
    }
    a = make_server(home, **common, connect_port=free_port())
    b = make_server(home, **common, connect_port=free_port())
    balancer = TcpProxy(("127.0.0.1", a.settings.connect_port)).start()
    spark = SparkSession.builder.remote(f"sc://localhost:{balancer.port}/").create()
    try:
        spark.range(7).createOrReplaceTempView("survivor")
        spark.conf.set("spark.sql.shuffle.partitions", "5")
        assert spark.sql("SELECT count(*) AS n FROM survivor").collect()[0].n == 7

        # An operation running when its node dies: the client reattaches through the other
        # node and gets its result from the same engine.
        answer: list[Any] = []
        errors: list[BaseException] = []

        def long_sum() -> None:
            try:
                rows = spark.range(0, 20_000_000_000, 1, 2).selectExpr("sum(id % 7) AS s")
                answer.append(rows.collect()[0].s)
            except BaseException as exc:
                errors.append(exc)

        running = threading.Thread(target=long_sum, daemon=True)
        running.start()
        with b.client() as on_b:
            query = eventually(
                lambda: next(
                    (
                        q
                        for q in on_b.queries(state=["running"]).queries
                        if "20000000000" in q.query
                    ),
                    None,
                ),
                timeout=120,
                what="the long operation running",
            )

        a.stop(signal.SIGKILL)  # the node dies without a word; its engine lives on
        balancer.target = ("127.0.0.1", b.settings.connect_port)
        balancer.pause()  # every connection to A is cut, as the balancer drops a dead node
        balancer.resume()

        running.join(600)
        assert not errors, errors
        rows = 20_000_000_000
        assert answer == [21 * (rows // 7) + sum(range(rows % 7))]
        with b.client() as on_b:
            assert on_b.query(query.id).state == "success"
        assert spark.sql("SELECT count(*) AS n FROM survivor").collect()[0].n == 7
        assert spark.conf.get("spark.sql.shuffle.partitions") == "5"
        with b.client() as on_b:
            queries = on_b.queries().queries
        texts = [q.query for q in queries]
        # One query a run, on either node (spark.sql's analysis of it is none).
        assert texts.count("SELECT count(*) AS n FROM survivor") == 2, texts
        assert all(q.state == "success" for q in queries), queries
    finally:
        spark.stop()
        balancer.stop()
