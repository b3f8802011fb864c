"""The spark-submit command line for engines on YARN (not yet run here: no YARN on this
machine; checked as a command line), and which launcher the setting picks."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from sparkgate.launcher import launcher_for
from sparkgate.launcher.kubernetes import LaunchRefused
from sparkgate.launcher.local import LocalLauncher
from sparkgate.launcher.submit import ENTRY, YarnLauncher, yarn_command
from sparkgate.settings import Settings
from sparkgate.states import EngineKind, EngineState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord

LAUNCHERS: tuple[Literal["local", "yarn"], ...] = ("local", "yarn")
PG = "postgresql+psycopg://sg@db.internal:5432/sparkgate"


def engine(conf: dict[str, str] | None = None) -> EngineRecord:
    return EngineRecord(
        id=7, kind=EngineKind.DEDICATED, state=EngineState.STARTING, session_id=3,
        conf=conf or {}, node_id="n", host=None, pid=None, app_id=None, log_path=None,
        error=None, version=1, created_at=0.0, started_at=None, heartbeat_at=None,
        finished_at=None, updated_at=0.0,
    )  # fmt: skip


def confs(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_yarn_runs_the_driver_here_in_client_mode(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path, store_url=PG, spark_master="yarn",
        spark_submit="/opt/spark/bin/spark-submit", spark_conf={"spark.executor.instances": "2"},
    )  # fmt: skip
    command = yarn_command(settings, engine({"spark.driver.memory": "2g"}))
    assert command[:7] == [
        "/opt/spark/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
        "--name", "sparkgate-engine-7",
    ]  # fmt: skip
    assert command[-3:] == [str(ENTRY), "--engine-id", "7"]
    given = confs(command)
    assert given["spark.executor.instances"] == "2" and given["spark.driver.memory"] == "2g"
    assert "spark.master" not in given  # an option, not a --conf
    assert ENTRY.exists()


def test_the_launcher_setting_picks_the_launcher(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    try:
        chosen = {
            name: type(launcher_for(Settings(home=tmp_path, launcher=name), store))
            for name in LAUNCHERS
        }
    finally:
        store.close()
    assert chosen == {"local": LocalLauncher, "yarn": YarnLauncher}


def test_kubernetes_refuses_a_store_engine_pods_cannot_reach(tmp_path: Path) -> None:
    """A node on SQLite with engines as pods does not start: the pods could not report."""
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    try:
        settings = Settings(home=tmp_path, launcher="kubernetes", kubernetes_image="img")
        with pytest.raises(LaunchRefused) as refused:
            launcher_for(settings, store)
    finally:
        store.close()
    assert "cannot use this node's SQLite file" in refused.value.message
