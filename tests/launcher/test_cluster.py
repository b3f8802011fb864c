"""A Spark standalone cluster from pyspark's jars (scripts/cluster), and engines running on it
as applications: named for the engine, one core each by default and only while busy but for
the shared engine's (so a two-core worker runs the shared engine and, in turn, the streaming
and warm engines), ended at the master when the engine stops, and failing clearly when the
cluster can give them no executor."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkgate_dev import TEST_SPARK_CONF, MakeServer, cluster, eventually

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.ClusterInfo]:
    if shutil.which("java") is None:
        pytest.skip("no Java: scripts/install installs it when it can")
    directory = tmp_path_factory.mktemp("cluster")
    info = cluster.start(directory, cores=2, memory="3g")
    try:
        yield info
    finally:
        stopped = cluster.stop(directory)
        assert info.master_pid in stopped


def test_the_cluster_runs_one_alive_worker_and_says_so(running: cluster.ClusterInfo) -> None:
    assert running.master_url.startswith("spark://127.0.0.1:")
    workers = cluster.master_state(running.master_ui)["workers"]
    assert [(w["state"], w["cores"]) for w in workers] == [("ALIVE", 2)]
    assert cluster.start(running.directory) == running  # already running: the same one
    shown = subprocess.run(
        [sys.executable, "-m", "sparkgate_dev.cluster", "status", "--dir", str(running.directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0 and running.master_url in shown.stdout
    assert "ALIVE, cores 0/2" in shown.stdout or "ALIVE, cores" in shown.stdout


def test_status_of_a_directory_with_no_cluster_fails(tmp_path: Path) -> None:
    assert cluster.status(tmp_path) is None
    shown = subprocess.run(
        [str(REPO / "scripts" / "cluster"), "status", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 1 and "no cluster runs" in shown.stdout


def test_engines_are_applications_that_share_the_cluster(
    running: cluster.ClusterInfo, make_server: MakeServer, tmp_path: Path
) -> None:
    # The defaults, but executors idle for 3 s (not 30) go back: the test need not wait.
    quick = {
        "spark.dynamicAllocation.executorIdleTimeout": "3s",
        "spark.dynamicAllocation.shuffleTracking.timeout": "3s",
    }
    server = make_server(
        spark_master=running.master_url,
        spark_conf={**TEST_SPARK_CONF, **quick},
        warm_engines=1,
        engine_executor_timeout=20.0,
    )
    with server.client() as sg:
        session = sg.create_session()
        assert sg.wait_session(session.id, {"idle", "dead", "error"}, 240).state == "idle"
        query = sg.submit(
            "SELECT id % 2 AS k, count(*) FROM range(1000) GROUP BY 1 ORDER BY 1",
            session_id=session.id,
        )
        assert sg.wait(query.id, timeout=120).state == "success"
        assert list(sg.rows(query.id)) == [[0, 500], [1, 500]]
        engine_id = sg.session(session.id).engine_id
        assert engine_id is not None
        name = f"sparkgate-engine-{engine_id}"
        [app] = [a for a in cluster.applications(running.master_ui) if a["name"] == name]
        assert app["state"] == "RUNNING" and app["cores"] <= 1  # never more than one core

        # The shared engine keeps its executor while idle; the warm one gives its back.
        [warm] = [e for e in sg.engines().engines if e.kind == "dedicated" and not e.session_id]

        def cores_of(engine: int) -> int | None:
            apps = cluster.applications(running.master_ui)
            found = [a["cores"] for a in apps if a["name"] == f"sparkgate-engine-{engine}"]
            return found[0] if found else None

        eventually(lambda: cores_of(warm.id) == 0, timeout=120, what="the warm engine idle")
        assert cores_of(engine_id) == 1

        # Two cores, three engines: the shared one holds one, the stream job's engine takes
        # the other (the warm one gave it back), and once the stream stops the warm engine
        # gets it for a one-off query of its own.
        out = tmp_path / "shared-cluster-stream"
        sg.create_stream(
            "share",
            "CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='5');\n"
            f"SAVE STREAM numbers TO parquet TRIGGER 500ms OPTIONS ('path'='{out}')",
        )

        def streaming() -> bool:
            queries = sg.stream("share").queries
            return bool(queries) and (queries[0].last_progress or {}).get("batch_id", -1) >= 2

        eventually(streaming, timeout=240, what="the stream job's third batch")
        again = sg.submit("SELECT count(*) FROM range(10)", session_id=session.id)
        assert sg.wait(again.id, timeout=120).state == "success"
        sg.stop_stream("share")
        sg.wait_stream("share", {"stopped"}, timeout=120)
        one_off = sg.submit("SELECT 40 + 2 AS answer", isolation="engine")
        assert sg.wait(one_off.id, timeout=240).state == "success"
        engines = sg.engines(all=True).engines
        assert not [e for e in engines if e.error], engines
        assert {"shared", "streaming", "dedicated"} <= {e.kind for e in engines}

        # Asking more than the worker has: the engine says so instead of waiting forever.
        greedy = sg.create_session(conf={"spark.executor.memory": "64g"})
        ended = sg.wait_session(greedy.id, {"idle", "dead", "error"}, 240)
        assert ended.state == "error", ended
        assert ended.error is not None
        assert ended.error.code == "NO_EXECUTORS", ended
        assert "spark.executor.memory=64g" in ended.error.message

        stopped = sg.stop_engine(engine_id)
        assert stopped.state in {"stopping", "stopped"}

    def ended_at_master() -> bool:
        master = cluster.master_state(running.master_ui)
        return name not in {a["name"] for a in master["activeapps"]} and name in {
            a["name"] for a in master["completedapps"]
        }

    eventually(ended_at_master, timeout=120, what=f"{name} to end at the master")


def test_stop_ends_the_daemons_and_their_executors(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("no Java")
    info = cluster.start(tmp_path / "c", cores=1, memory="1g")
    stopped = cluster.stop(tmp_path / "c")
    assert set(stopped) == {info.master_pid, info.worker_pid}
    assert cluster.status(tmp_path / "c") is None
    assert cluster.stop(tmp_path / "c") == []
