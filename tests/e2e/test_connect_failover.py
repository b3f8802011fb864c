"""A Spark Connect client whose node dies goes on through another node: which engine holds
its session is in the store, so the other node forwards to the same engine, where its
temporary views and settings still are. A TCP proxy stands for the load balancer in front."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from sparkgate.testing import free_port
from sparkgate.testing.proxy import TcpProxy

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(900)]


def test_a_client_goes_on_through_another_node(
    make_server: Any, pg_url: str, tmp_path: Any
) -> None:
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

        a.stop(signal.SIGKILL)  # the node dies without a word; its engine lives on
        balancer.target = ("127.0.0.1", b.settings.connect_port)
        balancer.pause()  # every connection to A is cut, as the balancer drops a dead node
        balancer.resume()

        assert spark.sql("SELECT count(*) AS n FROM survivor").collect()[0].n == 7
        assert spark.conf.get("spark.sql.shuffle.partitions") == "5"
        with b.client() as on_b:
            queries = on_b.queries()["queries"]
        texts = [q["query"] for q in queries]
        assert texts.count("SELECT count(*) AS n FROM survivor") >= 2, texts
        assert all(q["state"] == "success" for q in queries), queries
    finally:
        spark.stop()
        balancer.stop()
