"""Placement backs off after NO_EXECUTORS, with a real engine on a real Spark master that has
no worker: the warm engine registers, gets no executor within the (short) executor wait, and
fails; its record says which attempt it was and when the next may start, the placement duty
launches none before then, and a batch that needs an engine meanwhile ends at once with the
reason.

Its own server: the cluster must have no cores, which no other module's server can share.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sparkgate.catalog.metastore import stop_metastore
from sparkgate_dev import ServerProcess, cluster, eventually, kill_engines, local_test_settings

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("no-executors")
    master = cluster.start(home / "cluster", worker=False)
    settings = local_test_settings(
        home,
        spark_master=master.master_url,
        warm_engines=1,
        shared_engine=False,
        engine_executor_timeout=2.0,
        engine_backoff_min=600.0,
        engine_backoff_max=3600.0,
    )
    server = ServerProcess(settings)
    try:
        yield server.start()
    finally:
        server.stop()
        kill_engines(settings)
        stop_metastore(settings)  # the embedded one its node started
        cluster.stop(home / "cluster")


def _engines(http: httpx.Client) -> list[dict[str, Any]]:
    engines: list[dict[str, Any]] = http.get("/v1/engines", params={"all": True}).json()["engines"]
    return engines


def test_a_warm_engine_failing_no_executors_is_not_relaunched_until_its_backoff_ends(
    server: ServerProcess,
) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        [failed] = eventually(
            lambda: [e for e in _engines(http) if e["state"] == "failed"],
            timeout=240,
            interval=0.5,
            what="the warm engine failed",
        )
        error = failed["error"]
        assert error["code"] == "NO_EXECUTORS", error
        assert error["attempt"] == 1
        finished = failed["finished_at"]
        assert error["next_attempt_at"] > time.time() + 500  # 600 s after the failure
        assert "Attempt 1 in a row for this placement" in error["message"]
        # A batch that needs an engine now is told why, and when, at once.
        query = http.post("/v1/queries", json={"query": "SELECT 1", "isolation": "engine"})
        assert query.status_code == 201, query.text
        answer = http.get(f"/v1/queries/{query.json()['id']}", params={"wait": 30}).json()
        assert answer["state"] == "failed", answer
        assert answer["error"]["code"] == "ENGINE_BACKOFF"
        assert answer["error"]["attempt"] == 1
        assert answer["error"]["next_attempt_at"] == error["next_attempt_at"]
        # The placement duty (every 0.5 s here) has not started another warm engine.
        assert [e["id"] for e in _engines(http)] == [failed["id"]], finished
    # The CLI shows it too.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKGATE_")}
    listed = subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", "engines", "list", "--all"],
        env={**env, "SPARKGATE_SERVER": server.url, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    when = time.strftime("%H:%M:%S UTC", time.gmtime(error["next_attempt_at"]))
    assert f"NO_EXECUTORS (attempt 1, next {when})" in listed.stdout, listed.stdout
